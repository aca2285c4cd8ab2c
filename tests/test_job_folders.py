"""What killed drivers of a team's job leave in its folder (Spark's session artifacts, which no setting moves) is
moved into the run directory: at the run's end, or by `harness clean` after a harness that was killed; what the
folder held before the run stays. The real runs' folders: test_applications.py."""

from __future__ import annotations

from harness.evidence.layout import RunLayout
from harness.runner.job_folders import JobFolders
from tests.conftest import run_harness


def test_what_killed_drivers_left_is_moved_into_the_run_and_what_was_there_stays(tmp_path):
    job, other = tmp_path / "job", tmp_path / "other-job"
    (job / "artifacts" / "theirs").mkdir(parents=True)  # the team's own, before the run
    other.mkdir()
    layout = RunLayout(tmp_path / "run")
    noted = JobFolders(layout)
    noted.note("enrich", job)
    noted.note("audit", other)
    noted.note("enrich", job)  # a restart: the folder as it was before the first start is kept
    for folder in (job, other):  # as two killed sessions leave them
        (folder / "artifacts" / "spark-1f2e").mkdir(parents=True)
        (folder / "artifacts" / "spark-1f2e" / "x.py").write_text("")
    result = run_harness("clean", str(layout.root))  # a new process: what was noted is read from the run
    assert result.returncode == 0 and "moved 2 folder(s) Spark left in a job's folder" in result.stdout, result
    assert sorted(p.name for p in (job / "artifacts").iterdir()) == ["theirs"]
    assert not (other / "artifacts").exists()  # the run made it: gone again
    assert (layout.workdir("enrich") / "artifacts" / "spark-1f2e" / "x.py").is_file()
    assert (layout.workdir("audit") / "artifacts" / "spark-1f2e").is_dir()
    assert JobFolders(layout).tidy() == []  # nothing left the second time
