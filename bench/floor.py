#!/usr/bin/env python3
"""The floor of a recorded run: read and parse the project's files, do nothing else.

    python bench/floor.py DIR

Parses DIR/.replayci.yml, the pack's pack.yaml, every contract YAML (yaml.CSafeLoader) and
every fixture its golden_cases reference (json.load), exactly the files
`replayci --provider recorded` must read for DIR. No validation, no evaluation, no output
beyond one summary line. bench/recorded.py times this process against replayci.

Layout assumed: the one bench/gen_pack.py writes (pack: in .replayci.yml; default pack
paths contracts/, golden/, golden/negative/), with or without --vary: fixtures are read
with json.load whatever their layout (one line per key, pretty-printed or compact) and
whether or not their tools repeat, so the floor's work per byte is the same for both.
"""
import json
import os
import sys

import yaml

Loader = yaml.CSafeLoader


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=Loader)


def main(root):
    cfg = load_yaml(os.path.join(root, ".replayci.yml")) or {}
    packs = cfg.get("packs") or [cfg.get("pack", "packs/bench")]
    n_contracts = n_fixtures = 0
    for pack_rel in packs:
        pack = os.path.join(root, pack_rel)
        load_yaml(os.path.join(pack, "pack.yaml"))
        with open(os.path.join(pack, "nr-allowlist.json"), encoding="utf-8") as f:
            json.load(f)
        contracts = os.path.join(pack, "contracts")
        golden = os.path.join(pack, "golden")
        for name in sorted(os.listdir(contracts)):
            if not name.endswith(".yaml"):
                continue
            contract = load_yaml(os.path.join(contracts, name))
            n_contracts += 1
            for case in contract.get("golden_cases") or ():
                # negative/... refs resolve into golden/negative/, the default negative dir
                with open(os.path.join(golden, case["input_ref"]), encoding="utf-8") as f:
                    json.load(f)
                n_fixtures += 1
    print(f"floor: {n_contracts} contracts, {n_fixtures} fixtures parsed")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
