"""The ``streamlib`` Spark data source: topics as batch and streaming DataFrames.

One Spark input partition per topic partition (topics in the given order, partitions
ascending; a batch read keeps empty ranges, so its partition indexes are stable, and a
micro-batch leaves them out, as Spark's Kafka source does), unless
``minPartitions`` or ``maxRecordsPerPartition`` ask for large ranges to be split (as in
Spark's Kafka source): then a topic partition's range may be read by several Spark
tasks, each in offset order; or unless ``minRecordsPerPartition`` asks for small ranges
to be read together: consecutive ranges then share one Spark task until it holds at
least that many records (a Python read task costs Spark tens of milliseconds before
its first record, far more than reading a few thousand). Streaming offsets are
``{topic: {partition: next_offset}}`` dicts (partition keys are strings, as JSON makes them) kept by Spark in the query
checkpoint, whether or not ranges are split.

A schema given with ``.schema(...)`` may name any subset of the source columns, in any
order, with their types: only those columns are read and handed to Spark (Python data
sources get no column pruning from Spark, and the nested ``headers`` column is the
dearest to convert), e.g. ``spark.readStream.format("streamlib").schema("value binary")``.

Options: ``bootstrap`` (backend URL, default ``local://./streamlib-data``), ``topics``
(comma-separated, required), ``startingOffsets`` (``earliest`` default | ``latest`` |
JSON ``{"t": {"0": 5}}``), ``endingOffsets`` (batch only: ``latest`` default | JSON),
``maxRecordsPerTrigger`` (streaming), ``minPartitions`` / ``maxRecordsPerPartition``
(split ranges, see above), ``minRecordsPerPartition`` (read small ranges together,
see above; not with the two before), ``backendConfig`` / ``consumerConfig`` /
``producerConfig`` (JSON objects passed to :func:`streamlib.topics.open_backend`),
``applicationId`` (names the application's reset command in errors); ``windowCounts``
(internal, set by ``Streams``: topics to pre-aggregate for windowed counts, see
:mod:`streamlib.spark.window_counts`; it adds their columns to the schema);
``readerStage`` (internal, set by ``Streams`` for streaming reads: the function of the
stateless stage that reads every topic of the source, which each read task then runs
over its rows itself, see spark/rules/reader_stage.py, or of a stateful stage it runs for small
batches, see spark/rules/small_batch_reader.py; the reader's rows are that stage's output, or the
rows as read where it does not run, with the columns of :data:`~streamlib.spark.arrow.COMBINED_DDL`
added). A checkpoint
offset beyond a partition's log end stops the query (:class:`OffsetOutOfRange`).
The same format name writes to topics: see :mod:`streamlib.spark.sink`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping, Optional, Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import (DataSource, DataSourceReader, DataSourceStreamReader,
                                    InputPartition)
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType, StructField,
                               StructType)

from streamlib.errors import RESET_HINT, OffsetOutOfRange
from streamlib.runtime.order import processing_prefix
from streamlib.spark.arrow import COMBINED_DDL, COMBINED_FIELDS, SOURCE_COLUMNS, SOURCE_DDL, source_batches
from streamlib.spark import log_epochs, pickled, window_counts
from streamlib.spark.daemon import start_worker_task
from streamlib.topics.spec import BackendSpec, json_option

#: ``{topic: {partition (as str): offset}}``
Offsets = dict[str, dict[str, int]]
#: Records fetched from the log per ``read_arrow`` call while reading a range.
READ_CHUNK_RECORDS = 65_536
#: The option that hands the reader a stage to run (see the module docstring).
READER_STAGE_OPTION = "readerStage"


@dataclass(frozen=True)
class SourceOptions:
    """Parsed reader options (see the module docstring)."""

    backend: BackendSpec
    topics: tuple[str, ...]
    starting: str | Offsets = "earliest"
    ending: str | Offsets = "latest"
    max_records_per_trigger: Optional[int] = None
    #: names the application in errors (its reset command); optional
    application_id: Optional[str] = None
    #: split ranges so that a batch has at least this many input partitions
    min_partitions: Optional[int] = None
    #: split ranges so that none holds more offsets than this
    max_records_per_partition: Optional[int] = None
    #: the :data:`~streamlib.spark.window_counts.OPTION` value, if any
    window_counts: Optional[str] = None
    #: read consecutive ranges in one Spark task until it holds this many records
    min_records_per_partition: Optional[int] = None
    #: the :data:`READER_STAGE_OPTION` value, if any
    reader_stage: Optional[str] = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "SourceOptions":
        """Validate the options and check that every topic exists.

        >>> SourceOptions.parse({"topics": ""})
        Traceback (most recent call last):
        ...
        ValueError: option 'topics' is required: a comma-separated list of topic names
        """
        topics = tuple(t.strip() for t in (options.get("topics") or "").split(",") if t.strip())
        if not topics:
            raise ValueError("option 'topics' is required: a comma-separated list of topic names")
        parsed = cls(BackendSpec.from_options(options), topics,
                     _offsets_option(options, "startingOffsets", ("earliest", "latest")),
                     _offsets_option(options, "endingOffsets", ("latest",)),
                     _positive_option(options, "maxRecordsPerTrigger"),
                     options.get("applicationId") or None,
                     _positive_option(options, "minPartitions"),
                     _positive_option(options, "maxRecordsPerPartition"),
                     options.get(window_counts.OPTION) or None,
                     _positive_option(options, "minRecordsPerPartition"),
                     options.get(READER_STAGE_OPTION) or None)
        if parsed.min_records_per_partition and (parsed.min_partitions or parsed.max_records_per_partition):
            raise ValueError("option minRecordsPerPartition reads whole ranges together: it cannot be "
                             "combined with minPartitions or maxRecordsPerPartition, which split them")
        if parsed.window_counts and (parsed.min_partitions or parsed.max_records_per_partition):
            # a range read in pieces would restart each piece's running maxima
            raise ValueError(f"option {window_counts.OPTION} cannot be combined with split ranges")
        if parsed.reader_stage and parsed.window_counts:
            raise ValueError(f"options {READER_STAGE_OPTION} and {window_counts.OPTION} cannot be combined")
        backend = parsed.backend.open()
        for topic in topics:
            backend.num_partitions(topic)  # raises TopicNotFound("unknown topic 'x'")
        return parsed

    def resolve(self, spec: str | Offsets, unlisted: str = "earliest") -> Offsets:
        """Concrete offsets for ``earliest``/``latest``/explicit JSON, in canonical order;
        partitions an explicit spec leaves out get the ``unlisted`` end of the log."""
        backend = self.backend.open()
        if isinstance(spec, dict):
            fill = self.resolve(unlisted)
            return canonical({t: {p: spec.get(t, {}).get(p, off) for p, off in fill[t].items()}
                              for t in self.topics}, self.topics)
        bound = backend.start_offsets if spec == "earliest" else backend.end_offsets
        return canonical({t: bound(t) for t in self.topics}, self.topics)


def check_within_log(wanted: Offsets, available: Offsets, application_id: Optional[str]) -> None:
    """Raise :class:`OffsetOutOfRange` if an offset the query needs lies beyond its
    partition's log end: the log lost records the checkpoint counts as read (a torn or
    truncated log, a re-created topic), and the records appended next would get
    offsets the query thinks it has read, so they would be skipped without a word."""
    for topic, parts in wanted.items():
        for partition, offset in parts.items():
            end = available.get(topic, {}).get(partition)
            if end is not None and offset > end:
                way_out = (f"run {RESET_HINT.format(app=application_id)} to reprocess the input from "
                           "the beginning" if application_id else "delete the query's checkpoint")
                raise OffsetOutOfRange(
                    f"topic {topic!r} partition {partition}: the checkpoint is at offset {offset} but the "
                    f"log ends at offset {end} (torn or truncated log, or a re-created topic); new records "
                    f"would be skipped, so the application stops. To go on, {way_out}")


def _positive_option(options: Mapping[str, str], name: str) -> Optional[int]:
    text = options.get(name)
    if text is None:
        return None
    if not text.strip().isdigit() or int(text) < 1:
        raise ValueError(f"option {name} must be a positive integer, got {text!r}")
    return int(text)


def _offsets_option(options: Mapping[str, str], name: str, words: tuple[str, ...]) -> str | Offsets:
    text = (options.get(name) or words[0]).strip()
    if text in words:
        return text
    spec = json_option(options, name, None)
    if not isinstance(spec, dict) or not all(isinstance(v, dict) for v in spec.values()):
        raise ValueError(f"option {name} must be {' or '.join(words)} or JSON like "
                         f'{{"topic": {{"0": 42}}}}, got {text!r}')
    return {t: {str(p): int(o) for p, o in parts.items()} for t, parts in spec.items()}


def canonical(offsets: Mapping[str, Mapping], topics: Sequence[str]) -> Offsets:
    """Offsets with topics in ``topics`` order and partitions ascending, keys as strings.

    Spark compares streaming offsets by their JSON text, so equal offsets must always
    serialise identically.

    >>> canonical({"b": {10: 1, 2: 0}, "a": {"0": 3}}, ["a", "b"])
    {'a': {'0': 3}, 'b': {'2': 0, '10': 1}}
    """
    return {t: {str(p): int(o) for p, o in sorted(offsets.get(t, {}).items(), key=lambda i: int(i[0]))}
            for t in topics}


@dataclass(frozen=True)
class TopicRange(InputPartition):
    """One topic partition's offsets ``[start, end)`` to read in one Spark task."""

    topic: str
    partition: int
    start: int
    end: int


def plan_ranges(start: Offsets, end: Offsets, topics: Sequence[str]) -> list[TopicRange]:
    """One range per partition in ``end``, in the stable order; a partition missing
    from ``start`` (new since) is read from offset 0.

    >>> plan_ranges({"t": {"0": 4}}, {"t": {"0": 9, "1": 2}}, ["t"])
    [TopicRange(topic='t', partition=0, start=4, end=9), TopicRange(topic='t', partition=1, start=0, end=2)]
    """
    return [TopicRange(t, int(p), min(start.get(t, {}).get(p, 0), off), off)
            for t in topics for p, off in canonical(end, topics)[t].items()]


def split_ranges(ranges: list[TopicRange], min_partitions: Optional[int] = None,
                 max_records: Optional[int] = None) -> list[TopicRange]:
    """``ranges`` with large ones cut into consecutive pieces of near-equal size: none
    longer than ``max_records``, and, when there are fewer ranges than
    ``min_partitions``, each cut in proportion to its share of all offsets (Spark's Kafka
    source does the same with these options). Order is kept; empty ranges stay whole.

    >>> parts = split_ranges([TopicRange("t", 0, 0, 10), TopicRange("t", 1, 5, 5)], min_partitions=3)
    >>> [(r.partition, r.start, r.end) for r in parts]
    [(0, 0, 3), (0, 3, 6), (0, 6, 10), (1, 5, 5)]
    >>> [(r.start, r.end) for r in split_ranges([TopicRange("t", 0, 0, 5)], max_records=2)]
    [(0, 1), (1, 3), (3, 5)]
    """
    total = sum(r.end - r.start for r in ranges)
    spread = min_partitions is not None and len(ranges) < min_partitions and total > 0
    out: list[TopicRange] = []
    for r in ranges:
        size = r.end - r.start
        pieces = 1
        if spread:
            pieces = max(pieces, -(-size * min_partitions // total))
        if max_records is not None:
            pieces = max(pieces, -(-size // max_records))
        pieces = max(1, min(pieces, size))
        bounds = [r.start + size * i // pieces for i in range(pieces + 1)]
        out.extend(TopicRange(r.topic, r.partition, lo, hi) for lo, hi in zip(bounds, bounds[1:]))
    return out


@dataclass(frozen=True)
class RangeGroup(InputPartition):
    """Consecutive small ranges read one after the other in one Spark task."""

    ranges: tuple[TopicRange, ...]
    #: its place among its batch's input partitions (read by a reader stage)
    index: int = 0
    #: how many input partitions its batch has (read by a reader stage)
    tasks: int = 1


def group_small_ranges(ranges: list[TopicRange], min_records: Optional[int]
                       ) -> list[TopicRange | RangeGroup]:
    """``ranges`` in order, consecutive ones grouped until a group holds at least
    ``min_records`` records; a range that has them alone stays as it is. Only the
    ranges decide the groups (not the cluster), so a batch re-run after a restart is
    read by the same tasks.

    >>> ranges = [TopicRange("t", p, 0, n) for p, n in enumerate([900, 800, 7000, 300])]
    >>> [[r.partition for r in (g.ranges if isinstance(g, RangeGroup) else [g])]
    ...  for g in group_small_ranges(ranges, 5000)]
    [[0, 1, 2], [3]]
    >>> group_small_ranges(ranges[:1], 5000) == ranges[:1]
    True
    """
    if not min_records:
        return list(ranges)
    groups: list[list[TopicRange]] = []
    held = min_records
    for r in ranges:
        if held >= min_records:
            groups.append([])
            held = 0
        groups[-1].append(r)
        held += r.end - r.start
    return [group[0] if len(group) == 1 else RangeGroup(tuple(group)) for group in groups]


def plan_reads(options: "SourceOptions", start: Offsets, end: Offsets) -> list[TopicRange]:
    """The input partitions of ``[start, end)``: :func:`plan_ranges`, split as the
    ``minPartitions`` / ``maxRecordsPerPartition`` options ask."""
    ranges = plan_ranges(start, end, options.topics)
    if options.min_partitions is None and options.max_records_per_partition is None:
        return ranges
    return split_ranges(ranges, options.min_partitions, options.max_records_per_partition)


def source_columns(schema: Optional[StructType], options: Optional["SourceOptions"] = None) -> tuple[str, ...]:
    """The source columns a reader with ``schema`` produces, in its order: any subset of
    :data:`~streamlib.spark.arrow.SOURCE_DDL`'s columns with the same types.

    >>> source_columns(StructType([StructField("value", BinaryType()), StructField("offset", LongType())]))
    ('value', 'offset')
    >>> source_columns(StructType([StructField("value", StringType())]))
    Traceback (most recent call last):
    ...
    ValueError: the streamlib source has no column 'value string'; its columns are topic string, \
partition int, offset bigint, timestamp bigint, key binary, value binary, headers \
array<struct<key:string,value:binary>> (any subset, in any order)
    """
    if options is not None and (options.window_counts or options.reader_stage):
        option, full = ((window_counts.OPTION, _WINDOW_COUNT_COLUMNS) if options.window_counts
                        else (READER_STAGE_OPTION, _STAGE_COLUMNS))
        if schema is not None and tuple(schema.fieldNames()) != full:
            raise ValueError(f"option {option} needs the full schema")
        return full
    if schema is None:
        return SOURCE_COLUMNS
    full = {f.name: f.dataType for f in _SOURCE_SCHEMA.fields}
    for f in schema.fields:
        if full.get(f.name) != f.dataType:
            columns = ", ".join(f"{g.name} {g.dataType.simpleString()}" for g in _SOURCE_SCHEMA.fields)
            raise ValueError(f"the streamlib source has no column '{f.name} {f.dataType.simpleString()}'; "
                             f"its columns are {columns} (any subset, in any order)")
    return tuple(schema.fieldNames())


#: :data:`~streamlib.spark.arrow.SOURCE_DDL` as a StructType (parsing DDL needs a JVM).
_SOURCE_SCHEMA = StructType([
    StructField("topic", StringType()), StructField("partition", IntegerType()),
    StructField("offset", LongType()), StructField("timestamp", LongType()),
    StructField("key", BinaryType()), StructField("value", BinaryType()),
    StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                 StructField("value", BinaryType())])))])


_WINDOW_COUNT_COLUMNS = SOURCE_COLUMNS + tuple(window_counts.WINDOW_COUNT_SCHEMA.names[len(SOURCE_COLUMNS):])
_STAGE_COLUMNS = SOURCE_COLUMNS + tuple(f.name for f in COMBINED_FIELDS)


def read_partition(options: SourceOptions, partition: TopicRange | RangeGroup,
                   columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
    """The Arrow batches of one input partition: its range, or each range of its group;
    with a reader stage, what that stage makes of them."""
    ranges = partition.ranges if isinstance(partition, RangeGroup) else (partition,)
    if options.reader_stage:
        stage = pickled.decode(options.reader_stage)
        records = (batch for part in ranges for batch in read_range(options.backend, part))
        for batch in stage(records, partition.index, partition.tasks):
            yield with_combined_columns(batch)
        return
    for part in ranges:
        yield from read_range(options.backend, part, columns, options.window_counts)


def with_combined_columns(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A stage's output batch with :data:`~streamlib.spark.arrow.COMBINED_FIELDS`, null
    where its rows are not combined."""
    for field in COMBINED_FIELDS:
        if field.name not in batch.schema.names:
            batch = batch.append_column(field, pa.nulls(batch.num_rows, field.type))
    return batch


def read_range(backend: BackendSpec, part: TopicRange, columns: Sequence[str] = SOURCE_COLUMNS,
               counts: Optional[str] = None) -> Iterator[pa.RecordBatch]:
    """Arrow batches of source rows (``columns`` only) for one :class:`TopicRange`, read in
    chunks; ``counts``: the ``windowCounts`` option (pre-aggregated topics)."""
    start_worker_task()
    log = backend.open()
    chunks = (log.read_arrow(part.topic, part.partition, lo, min(lo + READ_CHUNK_RECORDS, part.end))
              for lo in range(part.start, part.end, READ_CHUNK_RECORDS))
    if not counts:
        for records in chunks:
            yield from source_batches(records, part.topic, part.partition, columns)
        return
    spec = window_counts.decode_inputs(counts).get(part.topic)
    if spec is not None:
        yield from window_counts.aggregate_range(chunks, part.topic, part.partition, spec)
        return
    for records in chunks:
        for batch in source_batches(records, part.topic, part.partition, SOURCE_COLUMNS):
            yield window_counts.with_null_window_columns(batch)


def limit_offsets(start: Offsets, available: Offsets, limit: Optional[int],
                  topics: Sequence[str]) -> Offsets:
    """End offsets that read at most ``limit`` records after ``start``, shared over the
    partitions in proportion to their backlog; never below ``start``.

    >>> limit_offsets({"t": {"0": 0, "1": 0}}, {"t": {"0": 30, "1": 10}}, 8, ["t"])
    {'t': {'0': 6, '1': 2}}
    """
    pairs = _backlogs(start, available, topics)
    backlog = [max(0, avail - begin) for _, _, begin, avail in pairs]
    total = sum(backlog)
    if limit is None or total <= limit:
        take = backlog
    else:
        take = [lag * limit // total for lag in backlog]
        spare = limit - sum(take)
        for i, lag in enumerate(backlog):
            extra = min(spare, lag - take[i])
            take[i] += extra
            spare -= extra
    return _ends(pairs, take, start, topics)


def aligned_limit_offsets(backend: TopicBackend, start: Offsets, available: Offsets, limit: Optional[int],
                          topics: Sequence[str]) -> Offsets:
    """End offsets that read at most ``limit`` records after ``start``: the first
    ``limit`` records of the processing order over all partitions (Kafka Streams'
    timestamp-synchronised choice of the next record), so that a batch never leaves a
    partition behind in event time (:func:`~streamlib.runtime.order.processing_prefix`).
    Reads the timestamps of at most ``limit`` records per partition with a backlog."""
    # in the order processing ties go by: topics by name, partitions ascending
    pairs = sorted(_backlogs(start, available, topics), key=lambda pair: pair[0])
    if limit is None or sum(max(0, avail - begin) for *_, begin, avail in pairs) <= limit:
        return limit_offsets(start, available, None, topics)
    stamps = [backend.read_arrow(t, int(p), begin, min(avail, begin + limit)).column("timestamp").to_numpy()
              if avail > begin else np.empty(0, np.int64) for t, p, begin, avail in pairs]
    return _ends(pairs, processing_prefix(stamps, limit), start, topics)


def _backlogs(start: Offsets, available: Offsets, topics: Sequence[str]) -> list[tuple[str, str, int, int]]:
    """``(topic, partition, start offset, available end)`` of every partition, in
    ``topics`` order, partitions ascending."""
    return [(t, p, start.get(t, {}).get(p, 0), off)
            for t in topics for p, off in canonical(available, topics)[t].items()]


def _ends(pairs: list[tuple[str, str, int, int]], take: Sequence[int], start: Offsets,
          topics: Sequence[str]) -> Offsets:
    """The end offsets that read ``take[i]`` records of ``pairs[i]``; a partition that
    vanished from the log keeps its start offset."""
    ends: dict[str, dict[str, int]] = {t: {} for t in topics}
    for (t, p, begin, _), n in zip(pairs, take):
        ends[t][p] = begin + n
    for t, parts in start.items():
        for p, off in parts.items():
            ends.setdefault(t, {}).setdefault(p, off)
    return canonical(ends, topics)


class TopicBatchReader(DataSourceReader):
    """Batch read of ``[startingOffsets, endingOffsets)``, resolved when planned."""

    def __init__(self, options: SourceOptions, columns: Sequence[str] = SOURCE_COLUMNS):
        self.options = options
        self.columns = tuple(columns)

    def partitions(self) -> list[TopicRange | RangeGroup]:
        if self.options.reader_stage:
            raise ValueError(f"option {READER_STAGE_OPTION} is for streaming reads only")
        start = self.options.resolve(self.options.starting, unlisted="earliest")
        end = self.options.resolve(self.options.ending, unlisted="latest")
        return group_small_ranges(plan_reads(self.options, start, end), self.options.min_records_per_partition)

    def read(self, partition: TopicRange | RangeGroup) -> Iterator[pa.RecordBatch]:
        return read_partition(self.options, partition, self.columns)


class TopicStreamReader(DataSourceStreamReader):
    """Micro-batch reader. Spark 4.1's Python streams have no admission control
    (``latestOffset()`` gets no start offset), so the reader tracks where the next batch
    starts itself: the initial offsets, then the end of every batch Spark plans —
    including the checkpoint's last batch, which Spark hands over on restart through
    ``partitions(end, end)`` (``AcceptsLatestSeenOffset``) before asking for new offsets.
    """

    def __init__(self, options: SourceOptions, columns: Sequence[str] = SOURCE_COLUMNS):
        self.options = options
        self.columns = tuple(columns)
        self._initial: Optional[Offsets] = None
        self._next_start: Optional[Offsets] = None

    def initialOffset(self) -> Offsets:
        if self._initial is None:
            self._initial = self.options.resolve(self.options.starting)
        return self._initial

    def latestOffset(self) -> Offsets:
        start = self._next_start or self.initialOffset()
        start, resumed = log_epochs.where_to_go_on(self.options.backend.open(), start, self.options.application_id)
        available = self.options.resolve("latest")
        check_within_log(start, available, self.options.application_id)
        end = aligned_limit_offsets(self.options.backend.open(), start, available,
                                    self.options.max_records_per_trigger, self.options.topics)
        end = log_epochs.stamped(self.options.backend.open(), end, resumed)
        self._next_start = end
        return end

    def partitions(self, start: Offsets, end: Offsets) -> list[TopicRange | RangeGroup]:
        start = self._checked_batch_start(start, end)
        self._next_start = log_epochs.restamped(end, canonical(log_epochs.plain(end), self.options.topics))
        end = log_epochs.plain(end)
        # Only ranges with records, as Spark's Kafka source plans them: each range is a
        # Python read task, and a small batch often touches one partition of many.
        planned = group_small_ranges([r for r in plan_reads(self.options, start, end) if r.end > r.start],
                                     self.options.min_records_per_partition)
        if self.options.reader_stage:
            # a reader stage's task partition is its read task's place in the plan
            return [RangeGroup(p.ranges if isinstance(p, RangeGroup) else (p,), i, len(planned))
                    for i, p in enumerate(planned)]
        return planned

    def read(self, partition: TopicRange | RangeGroup) -> Iterator[pa.RecordBatch]:
        return read_partition(self.options, partition, self.columns)

    def _checked_batch_start(self, start: Mapping, end: Mapping) -> Offsets:
        """Where the batch ``(start, end]`` reads from, once sure that a batch re-run from
        the checkpoint finds all its records again (see :mod:`~streamlib.spark.log_epochs`)."""
        start = log_epochs.batch_start(start, end)
        if log_epochs.EPOCHS in end:
            log_epochs.check_batch_still_there(self.options.backend.open(), start, end,
                                               self.options.application_id)
        else:  # a checkpoint from before epochs: its offsets must at least still exist
            check_within_log(canonical(end, self.options.topics), self.options.resolve("latest"),
                             self.options.application_id)
        return start


class TopicDataSource(DataSource):
    """``format("streamlib")``: read topics (batch and streaming) and write to them."""

    @classmethod
    def name(cls) -> str:
        return "streamlib"

    def schema(self) -> str:
        options = SourceOptions.parse(self.options)  # fail at load() on bad options / unknown topics
        if options.window_counts:
            return f"{SOURCE_DDL}, {window_counts.WINDOW_COUNT_DDL}"
        return f"{SOURCE_DDL}, {COMBINED_DDL}" if options.reader_stage else SOURCE_DDL

    def reader(self, schema: StructType) -> TopicBatchReader:
        options = SourceOptions.parse(self.options)
        return TopicBatchReader(options, source_columns(schema, options))

    def streamReader(self, schema: StructType) -> TopicStreamReader:
        options = SourceOptions.parse(self.options)
        return TopicStreamReader(options, source_columns(schema, options))

    def writer(self, schema: StructType, overwrite: bool):
        from streamlib.spark.sink import TopicBatchWriter

        return TopicBatchWriter.create(self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool):
        from streamlib.spark.sink import TopicStreamWriter

        return TopicStreamWriter.create(self.options, schema, overwrite)
