"""damage-checkpoint's damages on a checkpoint's real files (harness/faults/kinds/damage_checkpoint.py): each takes
exactly the files it names, keeps each whole first, and a checkpoint without them is left as it is."""

from __future__ import annotations

import pytest

from harness.faults.kinds.damage_checkpoint import damage_files


def _checkpoint(root, batches=3, state=True):
    """A query's checkpoint as Spark writes it on a local file system: metadata, offsets/N and commits/N with their
    checksums, and (with `state`) two versions of two state stores' files."""
    query = root / "checkpoints" / "job" / "main"
    for folder in ("offsets", "commits"):
        (query / folder).mkdir(parents=True)
        for n in range(batches):
            (query / folder / str(n)).write_text(f'v1\n{{}}\n{{"orders":{{"0":{n * 10}}}}}\n')
            (query / folder / f".{n}.crc").write_bytes(b"crc")
    (query / "metadata").write_text('{"id":"q-1"}\n')
    if state:
        for partition in ("0", "1"):
            store = query / "state" / "0" / partition
            store.mkdir(parents=True)
            for version in (1, 2):
                (store / f"{version}.delta").write_bytes(b"x" * 10)
                (store / f".{version}.delta.crc").write_bytes(b"crc")
    return query


def _damaged(tmp_path, damage, **shape):
    query = _checkpoint(tmp_path, **shape)
    files = damage_files(query.parent, tmp_path / "kept", tmp_path, damage)
    return query, {f["path"]: f for f in files}


@pytest.mark.parametrize(
    "damage, taken",
    [
        ("metadata", ["metadata"]),
        ("last-commit", ["commits/2", "commits/.2.crc"]),
        ("last-batch", ["offsets/2", "offsets/.2.crc", "commits/2", "commits/.2.crc"]),
        (
            "state-version",
            ["state/0/0/2.delta", "state/0/0/.2.delta.crc", "state/0/1/2.delta", "state/0/1/.2.delta.crc"],
        ),
    ],
)
def test_a_damage_removes_exactly_its_files_and_keeps_each_whole(tmp_path, damage, taken):
    query, files = _damaged(tmp_path, damage)
    prefix = "checkpoints/job/main/"
    assert sorted(files) == sorted(prefix + t for t in taken)
    for path, entry in files.items():
        assert entry["action"] == "removed" and not (tmp_path / path).exists()
        assert (tmp_path / entry["kept_as"]).stat().st_size == entry["bytes"] > 0
    left = {str(p.relative_to(query)) for p in query.rglob("*") if p.is_file()}
    assert not left & set(taken) and "offsets/1" in left and "commits/1" in left


def test_a_cut_file_keeps_its_first_half_and_loses_its_checksum(tmp_path):
    query, files = _damaged(tmp_path, "cut-offsets")
    cut = files["checkpoints/job/main/offsets/2"]
    assert cut["action"] == "cut" and (query / "offsets" / "2").stat().st_size == cut["to_bytes"] == cut["bytes"] // 2
    assert files["checkpoints/job/main/offsets/.2.crc"]["action"] == "removed"
    assert (tmp_path / cut["kept_as"]).read_text().endswith('{"orders":{"0":20}}\n')


def test_a_checkpoint_without_what_a_damage_takes_is_left_as_it_is(tmp_path):
    query, files = _damaged(tmp_path, "state-version", state=False)
    assert files == {} and not (tmp_path / "kept").exists() and (query / "commits" / "2").exists()
