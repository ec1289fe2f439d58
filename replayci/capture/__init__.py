"""From traffic to packs: the capture proxy, importers of recorded traffic, sessions, the
inference of contracts and the one writer of fixtures and contracts."""
