"""``python -m streamlib``: topic admin, produce from stdin, consume to stdout, describe, reset.

Each subcommand is a ``_add_<name>(subparsers)`` that registers its arguments and
handler; ``describe app.py`` prints an application's topology and ``reset`` makes
its next run start over.
Errors print one line, ``streamlib: error: ...``, and exit with 1 (2 for usage).
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Callable, Optional, Sequence

from . import __version__
from .app_file import AppFileError, application_id_in, load_topologies
from .config import StreamsConfig
from .errors import StreamlibError
from .reset import reset_application
from .serdes import SerializationError, Serde, serde_by_name
from .topics import DEFAULT_URL, TopicBackend, TopicsError, open_backend


class CliError(Exception):
    """A user-facing failure: printed as one line, exit code 1."""


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected k=v, got {text!r}")
    return key, value


def _serde(name: str) -> Serde:
    try:
        return serde_by_name(name)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap", default=DEFAULT_URL,
                        help=f"local://PATH or kafka://HOST:PORT[,HOST:PORT] (default {DEFAULT_URL})")
    parser.add_argument("--producer-config", type=_key_value, action="append", default=[],
                        metavar="K=V", help="confluent-kafka producer setting (repeatable)")
    parser.add_argument("--consumer-config", type=_key_value, action="append", default=[],
                        metavar="K=V", help="confluent-kafka consumer setting (repeatable)")


def open_from_args(args: argparse.Namespace) -> TopicBackend:
    """The backend named by ``--bootstrap`` with the passthrough client settings."""
    return open_backend(args.bootstrap, producer_config=dict(args.producer_config),
                        consumer_config=dict(args.consumer_config))


def _with_backend(handler: Callable[[TopicBackend, argparse.Namespace], None]):
    def run(args: argparse.Namespace) -> None:
        with open_from_args(args) as backend:
            handler(backend, args)
    return run


# ---- topics ------------------------------------------------------------------

def _topics_create(backend: TopicBackend, args: argparse.Namespace) -> None:
    info = backend.create_topic(args.topic, partitions=args.partitions, config=dict(args.config))
    print(f"created topic {info.name} with {info.partitions} partition(s)")


def _topics_list(backend: TopicBackend, args: argparse.Namespace) -> None:
    for name in backend.list_topics():
        print(name)


def _topics_describe(backend: TopicBackend, args: argparse.Namespace) -> None:
    info = backend.describe_topic(args.topic)
    starts, ends = backend.start_offsets(args.topic), backend.end_offsets(args.topic)
    config = ",".join(f"{k}={v}" for k, v in sorted(info.config.items())) or "-"
    print(f"topic {info.name}\tpartitions {info.partitions}\tconfig {config}")
    for p in range(info.partitions):
        print(f"  partition {p}\tstart {starts[p]}\tend {ends[p]}")


def _topics_delete(backend: TopicBackend, args: argparse.Namespace) -> None:
    backend.delete_topic(args.topic)
    print(f"deleted topic {args.topic}")


def _add_topics(subparsers) -> None:
    topics = subparsers.add_parser("topics", help="create, list, describe or delete topics")
    actions = topics.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="create a topic")
    create.add_argument("topic")
    create.add_argument("--partitions", type=int, default=1)
    create.add_argument("--config", type=_key_value, action="append", default=[], metavar="K=V",
                        help="topic config, e.g. cleanup.policy=compact (repeatable)")
    create.set_defaults(run=_with_backend(_topics_create))
    listing = actions.add_parser("list", help="list topics")
    listing.set_defaults(run=_with_backend(_topics_list))
    describe = actions.add_parser("describe", help="partitions, config and offsets of a topic")
    describe.add_argument("topic")
    describe.set_defaults(run=_with_backend(_topics_describe))
    delete = actions.add_parser("delete", help="delete a topic")
    delete.add_argument("topic")
    delete.set_defaults(run=_with_backend(_topics_delete))
    for sub in (create, listing, describe, delete):
        _common(sub)


# ---- produce / consume -------------------------------------------------------

def _produce(backend: TopicBackend, args: argparse.Namespace) -> None:
    backend.num_partitions(args.topic)  # fail on an unknown topic before reading stdin
    key_serde, value_serde = args.key_serde, args.value_serde
    for line in sys.stdin:
        line = line.rstrip("\n")
        key: Optional[str] = None
        if args.key_separator is not None:
            key, sep, line = line.partition(args.key_separator)
            if not sep:
                raise CliError(f"line has no key separator {args.key_separator!r}: {key!r:.80}")
        backend.produce(args.topic, key=key_serde.serialize(_parse(key, key_serde)),
                        value=value_serde.serialize(_parse(line, value_serde)), partition=args.partition)
    backend.flush()


def _parse(text: Optional[str], serde: Serde):
    """Text from stdin as the value the serde expects (numbers for numeric serdes)."""
    if text is None:
        return None
    try:
        if serde.name in ("long()", "integer()"):
            return int(text)
        if serde.name == "double()":
            return float(text)
        if serde.name == "json()":
            import json
            return json.loads(text)
        if serde.name == "bytes()":
            return text.encode()
    except ValueError as exc:
        raise CliError(f"cannot read {text!r:.80} as {serde.name}: {exc}") from None
    return text


def _format(value, serde: Serde) -> str:
    if value is None:
        return "null"
    if serde.name == "json()":
        import json
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return str(value)


def _consume(backend: TopicBackend, args: argparse.Namespace) -> None:
    """Print records until ``--max`` are printed or nothing new came for ``--timeout`` s."""
    n = backend.num_partitions(args.topic)
    if args.partition is not None and not 0 <= args.partition < n:
        raise CliError(f"topic {args.topic!r} has no partition {args.partition}: "
                       f"it has {n} (0..{n - 1})")
    partitions = [args.partition] if args.partition is not None else list(range(n))
    first = backend.start_offsets(args.topic) if args.from_beginning else backend.end_offsets(args.topic)
    position = {p: first[p] for p in partitions}
    printed = 0
    idle_since = time.monotonic()
    while args.max is None or printed < args.max:
        ends = backend.end_offsets(args.topic)
        progressed = False
        for p in partitions:
            if position[p] >= ends[p]:
                continue
            for record in backend.read(args.topic, p, position[p], ends[p]):
                value = _format(args.value_serde.deserialize(record.value), args.value_serde)
                if args.print_key:
                    value = f"{_format(args.key_serde.deserialize(record.key), args.key_serde)}\t{value}"
                print(value)
                printed += 1
                if args.max is not None and printed >= args.max:
                    break
            position[p] = ends[p]
            progressed = True
            if args.max is not None and printed >= args.max:
                break
        if progressed:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since >= args.timeout:
            break
        else:
            time.sleep(0.1)
    sys.stdout.flush()


def _add_produce(subparsers) -> None:
    produce = subparsers.add_parser("produce", help="produce lines from stdin")
    produce.add_argument("--topic", required=True)
    produce.add_argument("--key-separator", default=None, metavar="SEP",
                         help="split each line into key SEP value (default: no key)")
    produce.add_argument("--partition", type=int, default=None)
    produce.add_argument("--key-serde", type=_serde, default=serde_by_name("string"))
    produce.add_argument("--value-serde", type=_serde, default=serde_by_name("string"))
    _common(produce)
    produce.set_defaults(run=_with_backend(_produce))


def _add_consume(subparsers) -> None:
    consume = subparsers.add_parser("consume", help="print records of a topic")
    consume.add_argument("--topic", required=True)
    consume.add_argument("--from-beginning", action="store_true")
    consume.add_argument("--max", type=int, default=None, metavar="N", help="stop after N records")
    consume.add_argument("--partition", type=int, default=None)
    consume.add_argument("--key-serde", type=_serde, default=serde_by_name("string"))
    consume.add_argument("--value-serde", type=_serde, default=serde_by_name("string"))
    consume.add_argument("--print-key", action="store_true", help="print key<TAB>value")
    consume.add_argument("--timeout", type=float, default=1.0, metavar="S",
                         help="stop after S seconds without new records (default 1)")
    _common(consume)
    consume.set_defaults(run=_with_backend(_consume))


# ---- describe / reset ------------------------------------------------------------

def _describe(args: argparse.Namespace) -> None:
    try:
        topologies = load_topologies(args.app)
        application_id = args.application_id or application_id_in(args.app)
    except AppFileError as exc:
        raise CliError(str(exc)) from None
    for name, topology in topologies.items():
        if len(topologies) > 1:
            print(f"# {name}")
        print(topology.describe(application_id), end="")


def _add_describe(subparsers) -> None:
    describe = subparsers.add_parser("describe", help="print the topology an application file defines")
    describe.add_argument("app", metavar="APP.py",
                          help="read without running it: its top-level statements up to the first "
                               "that runs the application (never its __main__ block); a module-level "
                               "Topology or StreamsBuilder, or a build_topology()/topology() function")
    describe.add_argument("--application-id", default=None,
                          help="name internal topics as this application would (default: the "
                               "application_id the file gives StreamsConfig)")
    describe.set_defaults(run=_describe)


def _reset(backend: TopicBackend, args: argparse.Namespace) -> None:
    config = StreamsConfig(application_id=args.application_id, bootstrap=args.bootstrap,
                           state_dir=args.state_dir, checkpoint_location=args.checkpoint_location)
    done = reset_application(backend, config, include_dlq=args.include_dlq)
    for line in done or [f"nothing to reset for application {args.application_id}"]:
        print(line)


def _add_reset(subparsers) -> None:
    reset = subparsers.add_parser(
        "reset", help="delete an application's internal topics, checkpoint and local state, "
                      "so its next run reprocesses its input from the beginning")
    reset.add_argument("--application-id", required=True)
    reset.add_argument("--state-dir", default=None,
                       help="default: $STREAMLIB_STATE_DIR, else ~/.cache/streamlib/state")
    reset.add_argument("--checkpoint-location", default=None,
                       help="default: where the application keeps it (beside the topics for local://)")
    reset.add_argument("--include-dlq", action="store_true",
                       help="also delete the dead letter topic <application-id>-dlq")
    _common(reset)
    reset.set_defaults(run=_with_backend(_reset))


# ---- entry point ---------------------------------------------------------------

COMMANDS: list[Callable] = [_add_topics, _add_produce, _add_consume, _add_describe, _add_reset]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="streamlib", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"streamlib {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(subparsers)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except (CliError, TopicsError, SerializationError, StreamlibError, OSError) as exc:
        print(f"streamlib: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
