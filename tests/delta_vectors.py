"""Delta deletion vectors as the protocol stores them, written and read by the tests' own code with pyroaring (not
delta-rs, which the harness reads them with): a serialized RoaringBitmapArray (a magic number, then 32-bit Roaring
bitmaps in their portable format, each after its key), inline in the log as Z85 text or in a file of the table's
folder (a version byte, then at the vector's offset its size, the bitmap and its CRC-32, big-endian)."""

from __future__ import annotations

import uuid
import zlib
from pathlib import Path

from pyroaring import BitMap

MAGIC = 1681511377  # a RoaringBitmapArray's first int (little-endian)
Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def bitmap(positions: list[int]) -> bytes:
    """Row positions (below 2**32: one bitmap, key 0) as the protocol serializes them."""
    head = MAGIC.to_bytes(4, "little") + (1).to_bytes(8, "little") + (0).to_bytes(4, "little")
    return head + BitMap(positions).serialize()


def positions(data: bytes) -> set[int]:
    """The row positions of a serialized RoaringBitmapArray of one bitmap."""
    assert int.from_bytes(data[:4], "little") == MAGIC and int.from_bytes(data[4:12], "little") == 1, data[:16]
    return set(BitMap.deserialize(data[16:]))


def z85(data: bytes) -> str:
    data += b"\0" * (-len(data) % 4)
    out = []
    for i in range(0, len(data), 4):
        number = int.from_bytes(data[i : i + 4], "big")
        out.append("".join(Z85[number // 85**k % 85] for k in range(4, -1, -1)))
    return "".join(out)


def on_disk(table: Path, rows: list[int], damaged: bool = False) -> dict:
    """A deletion vector of these rows written to a file of the table's folder; its descriptor."""
    file_id, data = uuid.uuid4(), bitmap(rows)
    crc = zlib.crc32(data) ^ (1 if damaged else 0)
    body = b"\x01" + len(data).to_bytes(4, "big") + data + crc.to_bytes(4, "big")
    (table / f"deletion_vector_{file_id}.bin").write_bytes(body)
    descriptor = {"storageType": "u", "pathOrInlineDv": z85(file_id.bytes), "offset": 1, "sizeInBytes": len(data)}
    return descriptor | {"cardinality": len(rows)}


def inline(rows: list[int]) -> dict:
    data = bitmap(rows)
    return {"storageType": "i", "pathOrInlineDv": z85(data), "sizeInBytes": len(data), "cardinality": len(rows)}


def deleted(table: Path, descriptor: dict) -> set[int]:
    """The rows an on-disk descriptor's vector marks deleted, its file found among the table's by its encoded uuid
    (Spark's: a vector inline, under a prefix or by an absolute path is not read here)."""
    files = {z85(uuid.UUID(p.stem.removeprefix("deletion_vector_")).bytes): p for p in table.glob("deletion_vector_*")}
    body = files[descriptor["pathOrInlineDv"]].read_bytes()
    start = descriptor.get("offset") or 0
    size = int.from_bytes(body[start : start + 4], "big")
    return positions(body[start + 4 : start + 4 + size])
