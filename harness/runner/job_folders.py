"""What Spark leaves in a team's job folder, moved into the run directory at the run's end (or by `harness clean`
after a harness that was killed).

Spark makes each session's artifacts folder (artifacts/spark-<uuid>/, its ArtifactManager's) relative to the driver
JVM's working directory, which stays the job's own folder (its command runs there unchanged), and no setting moves
it. A driver that exits removes its own; one killed cannot. Everything else Spark or Python would leave there goes
elsewhere from the start (harness/runner/applications.py: the warehouse, the Derby metastore; no byte-code written).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.evidence.layout import RunLayout

ARTIFACTS = "artifacts"


class JobFolders:
    """The artifacts folders of the jobs a run starts, as they were before it, noted in the run directory."""

    def __init__(self, layout: RunLayout) -> None:
        self.layout = layout

    def _noted(self) -> dict[str, list]:
        """artifacts/ -> [application, the names it held before (None: it did not exist)]."""
        try:
            return json.loads(self.layout.job_folders.read_text())
        except (OSError, ValueError):
            return {}

    def note(self, application: str, cwd: Path) -> None:
        """Before an application's first start: what its folder's artifacts/ holds."""
        folder = Path(cwd) / ARTIFACTS
        noted = self._noted()
        if str(folder) not in noted:
            names = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else None
            noted[str(folder)] = [application, names]
            self.layout.job_folders.parent.mkdir(parents=True, exist_ok=True)
            self.layout.job_folders.write_text(json.dumps(noted, indent=2))

    def tidy(self) -> list[Path]:
        """Move what the run's drivers left in each artifacts/ into the application's work folder; remove
        artifacts/ if the run made it. Returns where each thing went."""
        moved = []
        for name, (application, before) in self._noted().items():
            folder = Path(name)
            if not folder.is_dir():
                continue
            for left in sorted(p for p in folder.iterdir() if before is None or p.name not in before):
                target = self.layout.workdir(application) / ARTIFACTS / left.name
                target.parent.mkdir(parents=True, exist_ok=True)
                moved.append(Path(shutil.move(str(left), target)))
            if before is None and not any(folder.iterdir()):
                folder.rmdir()
        return moved
