"""A Delta Lake table an application writes (`format: delta`): committed through its `_delta_log`, whose commits
record each data file added or removed; the job gets Delta's jars from the harness (jars/delta/pom.xml).

Read as a reader of the table reads it: the live files by the protocol's file identity (contract/table_files.py
delta_log), less the rows their deletion vectors mark deleted (a MERGE, UPDATE or DELETE on a table with
`delta.enableDeletionVectors`), read by delta-rs (the `deltalake` package), each on-disk vector's checksum checked
here (delta-rs does not). A table using a reader feature this reader does not implement is not counted at all.
"""

from __future__ import annotations

import uuid
import zlib
from pathlib import Path
from urllib.parse import unquote, urlparse

from contract.table_files import DELTA_LOG, DeltaLog, DeltaRewrite, data_files, delta_log, read_rows
from harness.outputs.files import (
    Committed,
    Rewrites,
    TableFormat,
    UnreadTable,
    Written,
    copied_rows,
    file_kind,
    newest_entry_ms,
)

# The reader features whose tables are read right here: deletion vectors applied, a timestamp without a zone is a
# column type, the vacuum check concerns writers only. Any other (columnMapping, typeWidening, v2Checkpoint,
# variantType, ...) makes the table unread: counted without it, its rows would be wrong.
READ_FEATURES = frozenset({"deletionVectors", "timestampNtz", "vacuumProtocolCheck"})
Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def _z85(text: str) -> bytes:
    """Z85-decoded bytes (the protocol's encoding of a vector's file id)."""
    out = bytearray()
    for i in range(0, len(text), 5):
        number = 0
        for char in text[i : i + 5]:
            number = number * 85 + Z85.index(char)
        out += number.to_bytes(4, "big")
    return bytes(out)


def _vector_file(table: Path, dv: dict) -> Path | None:
    """Where an on-disk deletion vector is stored (None: inline, in the log itself)."""
    if dv["storageType"] == "u":  # a file of the table's folder: a random prefix, then the file's uuid in Z85
        prefix, encoded = dv["pathOrInlineDv"][:-20], dv["pathOrInlineDv"][-20:]
        return table / prefix / f"deletion_vector_{uuid.UUID(bytes=_z85(encoded))}.bin"
    if dv["storageType"] == "p":
        return Path(unquote(urlparse(dv["pathOrInlineDv"]).path))
    return None


def check_vector(table: Path, dv: dict) -> None:
    """UnreadTable unless an on-disk vector is whole: at its offset, its size (4 bytes, big-endian), the bitmap, and
    the CRC-32 of the bitmap (4 bytes, big-endian), as the protocol stores it."""
    path = _vector_file(table, dv)
    if path is None:
        return
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UnreadTable(f"deletion vector {path.name}: {exc.strerror}") from None
    start = dv.get("offset") or 0
    size = int.from_bytes(data[start : start + 4], "big")
    bitmap, crc = data[start + 4 : start + 4 + size], data[start + 4 + size : start + 8 + size]
    if size != dv["sizeInBytes"] or len(crc) != 4 or zlib.crc32(bitmap) != int.from_bytes(crc, "big"):
        raise UnreadTable(f"deletion vector {path.name}: its checksum does not match its bitmap (a damaged file)")


def deleted_rows(table: Path, log: DeltaLog) -> dict[str, frozenset[int]]:
    """Data file name -> the positions of its rows its deletion vector marks deleted, as delta-rs reads them at
    the log's last commit."""
    from deltalake import DeltaTable  # here: only a table with deletion vectors loads it

    for dv in log.vectors.values():
        check_vector(table, dv)
    try:
        vectors = DeltaTable(str(table), version=log.version).deletion_vectors().read_all()
    except Exception as exc:  # delta-rs raises its own errors (a feature it refuses, a file it cannot read)
        raise UnreadTable(f"delta-rs cannot read its deletion vectors: {str(exc).splitlines()[0]}") from None
    return {
        Path(unquote(urlparse(filepath).path)).name: frozenset(i for i, keep in enumerate(selection) if not keep)
        for filepath, selection in zip(vectors["filepath"].to_pylist(), vectors["selection_vector"].to_pylist())
    }


def committed(table: Path) -> Committed:
    """The live files' batches and their rows deleted; UnreadTable where the table uses what is not read here."""
    log = delta_log(table)
    unread = sorted((log.reader_features - READ_FEATURES) | ({"columnMapping"} if log.column_mapping else set()))
    if unread:
        raise UnreadTable(f"its table uses the Delta reader feature(s) {', '.join(unread)}, which are not read here")
    return Committed(log.live, deleted_rows(table, log) if log.vectors else {}, log.rewritten)


CHANGE_TYPE, COMMIT_VERSION = "_change_type", "_commit_version"  # the change data feed's columns
DELIVERED_CHANGES = ("insert", "update_postimage")


def _changes(table: Path, versions: dict[int, DeltaRewrite]) -> tuple[Written, ...]:
    """Each of these commits' changes as the change data feed lists them (delta-rs, read once): the rows it
    inserted, and the new values of those it updated, each a delivery."""
    import pyarrow as pa
    from deltalake import DeltaTable

    if not versions:
        return ()
    try:
        feed = pa.table(DeltaTable(str(table)).load_cdf(min(versions), max(versions)).read_all())
    except Exception as exc:  # delta-rs raises its own errors (a change file gone, a feature it refuses)
        raise UnreadTable(f"delta-rs cannot read the change data feed of commits {sorted(versions)}: {exc}") from None
    rows: dict[int, list[dict]] = {version: [] for version in versions}
    for row in feed.to_pylist():
        if row[COMMIT_VERSION] in rows and row[CHANGE_TYPE] in DELIVERED_CHANGES:
            own = {k: v for k, v in row.items() if not k.startswith("_commit_") and k != CHANGE_TYPE}
            rows[row[COMMIT_VERSION]].append(own)
    return tuple(Written(r.batch, r.timestamp_ms, rows[v], kept=False) for v, r in sorted(versions.items()))


def _copies(table: Path, files: dict[str, Path], rewrite: DeltaRewrite) -> tuple[dict[str, frozenset[int]], int]:
    """Of each file a copy-on-write commit added, the positions of its rows copied from the files it replaced (or
    updated to the values they had); and how many of them were such updates: beyond the copies its metrics count,
    or where they count none, its updates less those that changed a row (its new rows less its inserts). A commit
    whose metrics count no copy (one marking rows deleted with deletion vectors writes only its changes) copied
    nothing."""
    if rewrite.copied == 0:
        return {}, 0
    replaced = []
    for name in rewrite.removed:
        rows = read_rows(table, files[name]) if name in files else None
        if rows is None:  # removed from disk since (a vacuum): what it held cannot be compared
            raise UnreadTable(f"data file {name}, replaced by commit {rewrite.version}, is no longer readable")
        replaced.append(rows)
    added = {name: (read_rows(table, files[name]) or []) if name in files else [] for name in rewrite.added}
    copies = copied_rows(replaced, added)
    alike = sum(len(positions) for positions in copies.values())
    if rewrite.copied is not None:
        return copies, max(0, alike - rewrite.copied)
    new = sum(len(rows) for rows in added.values()) - alike
    return copies, max(0, rewrite.updated - (new - rewrite.inserted))


def rewrites(table: Path) -> Rewrites:
    """What the table's MERGE, UPDATE and DELETE commits delivered: from a commit's change data feed where it has
    one (exact), else its added files' rows less those copied from the files it replaced (an update that wrote a
    row's values again looks like a copy: counted, unattributed)."""
    copies, fed, unattributed = {}, {}, 0
    files = None
    for rewrite in delta_log(table).rewrites:
        if rewrite.changes:
            fed[rewrite.version] = rewrite
            continue
        files = files or {path.name: path for path in data_files(table)}
        found, hidden = _copies(table, files, rewrite)
        copies.update(found)
        unattributed += hidden
    replaced = frozenset(name for rewrite in fed.values() for name in rewrite.added)
    doubt = UNATTRIBUTED.format(unattributed) if unattributed else None
    return Rewrites(copies, replaced, _changes(table, fed), doubt)


UNATTRIBUTED = (
    "{:,} row(s) updated by MERGE or UPDATE commits that copied the other rows of the files they replaced and kept no "
    "change data feed: an update to the values a row had cannot be told from a copy, so such a row is not counted "
    "as delivered again (a table with delta.enableChangeDataFeed lists each)"
)


FORMAT = TableFormat("delta", committed, lambda folder: newest_entry_ms(folder / DELTA_LOG), rewrites=rewrites)

# The Delta Lake release (delta-spark) built for each Spark line (jars/delta/pom.xml).
RELEASES = {"3.5": "3.3.2", "4.0": "4.0.0", "4.1": "4.1.0", "4.2": "4.4.0"}
KIND = file_kind(
    "delta-table", "a Delta Lake table the job writes in ${path.NAME}", FORMAT, jar_sets={"delta": RELEASES}
)
