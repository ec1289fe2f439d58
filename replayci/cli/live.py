"""The commands that call a live provider outside a run: `observe` and `replay`."""
from __future__ import annotations

import sys

import click

from .. import config
from ..core.provider_table import LIVE_PROVIDERS
from ..pack.vocabulary import PROVIDERS, TIMEOUT_MS
from ..tools import observe as observing
from ..tools import replay as replaying
from .main import EXIT_GATE, EXIT_OK, choice, guarded
from .output import Output


@click.command()
@click.option("--provider", help=" | ".join(LIVE_PROVIDERS))
@click.option("--model", help="The model to observe.")
@click.option("--base-url", help="The provider's endpoint (a compatible server, a proxy; Bedrock: its URL).")
@click.option("--jobs", type=click.IntRange(min=1), help="Live calls at once (default 4).")
@click.option("--input", "input_dir", required=True, type=click.Path(exists=True, file_okay=False),
              help='A directory of specs: {"messages": [...], "tools": [...]} (*.json, *.yaml).')
@click.option("--output", "output_dir", required=True, type=click.Path(file_okay=False),
              help="The pack directory to write.")
@click.option("--timeout-ms", type=click.IntRange(min=1), default=TIMEOUT_MS, show_default=True,
              help="Per call.")
@click.option("--keep-raw", is_flag=True, help="Keep the raw provider payload in recordings.")
@click.option("--force", is_flag=True, help="Observe into an existing pack at --output: each answer is judged "
              "against its case first, and one that breaks it is not written.")
@click.option("--update", is_flag=True, help="Accept new behaviour: write every answer into the pack at --output, "
              "also those that break their cases, and print what changed per contract.")
@click.option("--draft", is_flag=True,
              help="Write draft contracts (status: observed: they run and never fail) with looser checks.")
@click.option("--no-color", is_flag=True, help="No colour (also NO_COLOR).")
@click.option("-v", "--verbose", count=True, help="Tracebacks on internal errors.")
@guarded
def observe(provider, model, base_url, jobs, input_dir, output_dir, timeout_ms, keep_raw, force, update, draft,
            no_color, verbose) -> None:
    """Call a provider on each spec, infer each answer's checks, write a pack that passes offline
    (with --draft, draft contracts: status observed)."""
    choice(provider, PROVIDERS, "--provider")
    settings = config.resolve({"provider": provider, "model": model, "base_url": base_url,
                               "jobs": jobs, "keep_raw": keep_raw})
    result = observing.observe(settings, input_dir=input_dir, output_dir=output_dir, force=force,
                               timeout_ms=timeout_ms, draft=draft, update=update)
    out = Output(no_color=no_color, verbose=verbose)
    out.text(observing.render(result, style=out.style))
    if result.broken or result.changed:
        from .proxy_check import show_judged  # only when judging found something

        show_judged("observe", broken=result.broken, packs=result.packs, changed=result.changed)
    sys.exit(EXIT_OK if result.ok else EXIT_GATE)


@click.command("replay")
@click.argument("case_ref", metavar="PACK/CONTRACT/CASE")
@click.option("--model", help="Re-run with this model (default: the recorded one).")
@click.option("--system-prompt", help="Replace the system prompt (or add one).")
@click.option("--temperature", type=float, help="Set the request's temperature.")
@click.option("--provider", help=f"{' | '.join(LIVE_PROVIDERS)} (default: the recorded one).")
@click.option("--base-url", help="The provider's endpoint (a compatible server, a proxy; Bedrock: its URL).")
@click.option("--json", "json_out", is_flag=True, help="Print the replay diff as JSON on stdout (lines go to stderr).")
@click.option("--fail-on-diff", is_flag=True, help="Exit 1 when the replay is not identical to the recording.")
@click.option("--no-color", is_flag=True, help="No colour (also NO_COLOR).")
@click.option("-v", "--verbose", count=True, help="Tracebacks on internal errors.")
@guarded
def replay_command(case_ref, model, system_prompt, temperature, provider, base_url, json_out, fail_on_diff,
                   no_color, verbose) -> None:
    """Re-run a recorded scenario live with overrides, tools frozen; diff it against the recording."""
    choice(provider, PROVIDERS, "--provider")
    settings = config.resolve({"provider": provider, "model": model, "base_url": base_url})
    doc = replaying.replay(settings, case_ref, system_prompt=system_prompt, temperature=temperature)
    out = Output(json_out=json_out, no_color=no_color, verbose=verbose)
    out.warnings(doc["warnings"])
    out.text(replaying.render(doc, style=out.style))
    out.json(doc)
    sys.exit(EXIT_GATE if fail_on_diff and not doc["identical"] else EXIT_OK)
