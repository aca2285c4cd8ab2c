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

from contract.table_files import DELTA_LOG, DeltaLog, delta_log
from harness.outputs.files import Committed, TableFormat, UnreadTable, file_kind, newest_entry_ms

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


FORMAT = TableFormat("delta", committed, lambda folder: newest_entry_ms(folder / DELTA_LOG))

# The Delta Lake release (delta-spark) built for each Spark line (jars/delta/pom.xml).
RELEASES = {"3.5": "3.3.2", "4.0": "4.0.0", "4.1": "4.1.0", "4.2": "4.4.0"}
KIND = file_kind(
    "delta-table", "a Delta Lake table the job writes in ${path.NAME}", FORMAT, jar_sets={"delta": RELEASES}
)
