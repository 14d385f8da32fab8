"""`vitbench models`: the preset registry."""

from __future__ import annotations

from vitbench.cli.common import add_format_argument, emit, terminal_width


def register(subparsers) -> None:
    parser = subparsers.add_parser("models", help="list the model presets")
    parser.add_argument("--kind", choices=["vit", "resnet", "plaincnn"], help="only this kind")
    parser.add_argument("--filter", metavar="TEXT", help="only presets whose name contains TEXT")
    add_format_argument(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    from vitbench.analytic import params
    from vitbench.presets import list_presets

    records = [
        {
            "model": p.name,
            "kind": p.spec.kind,
            "img_size": p.spec.img_size[0],
            "params": params(p.spec),
            "description": p.description,
            "source": p.source,
        }
        for p in list_presets()
        if (not args.kind or p.spec.kind == args.kind) and (not args.filter or args.filter.lower() in p.name)
    ]
    if not records:
        from vitbench.errors import VitbenchError

        given = ", ".join(f"--{k}={v!r}" for k, v in (("kind", args.kind), ("filter", args.filter)) if v)
        raise VitbenchError(f"{given}: no preset matches (see `vitbench models`)")
    emit(args, records, width=terminal_width())  # descriptions and sources wrap to fit
    return 0
