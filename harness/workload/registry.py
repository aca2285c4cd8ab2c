"""A schema registry for the jobs that look their schemas up: the part of Confluent Schema Registry's REST API that
jobs and serializers call, served over HTTP on loopback, holding in memory the schemas of the run's templates.

    python -m harness.workload.registry SETTINGS.json

It is not Confluent's registry (no Kafka-backed store, no compatibility checks, no auth): it answers what a job asks
before it reads (a subject's latest version, a schema by its id, the subjects, a registration) as that registry
answers, each schema registered under its topic's subject (`TOPIC-value`) with the template's id. Every request is
logged (time, method, path, status) as one JSON line, so the run shows what the job looked up.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
PROBE = "X-Harness-Probe"  # a header of the harness's own requests, left out of the log


@dataclass(frozen=True)
class Registered:
    subject: str
    version: int
    id: int
    schema: str  # the schema's JSON text

    def answer(self) -> dict:
        return {"subject": self.subject, "version": self.version, "id": self.id, "schema": self.schema}


@dataclass(frozen=True)
class RegistrySettings:
    port: int
    log: str  # the request log, a JSON line a request
    schemas: tuple[Registered, ...]

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, path: Path) -> RegistrySettings:
        data = json.loads(Path(path).read_text())
        return cls(data["port"], data["log"], tuple(Registered(**s) for s in data["schemas"]))


class NotFound(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


class Schemas:
    """The registered schemas, by subject and version and by id; a registration of a new schema gets the next id."""

    def __init__(self, schemas: tuple[Registered, ...]):
        self.all = list(schemas)
        self.lock = threading.Lock()

    def subject(self, subject: str) -> list[Registered]:
        found = [s for s in self.all if s.subject == subject]
        if not found:
            raise NotFound(40401, f"Subject '{subject}' not found.")
        return found

    def version(self, subject: str, version: str) -> Registered:
        versions = self.subject(subject)
        if version in ("latest", "-1"):
            return versions[-1]
        found = [s for s in versions if str(s.version) == version]
        if not found:
            raise NotFound(40402, f"Version {version} not found.")
        return found[0]

    def by_id(self, schema_id: str) -> list[Registered]:
        found = [s for s in self.all if str(s.id) == schema_id]
        if not found:
            raise NotFound(40403, f"Schema {schema_id} not found")
        return found

    def find(self, subject: str, schema: str) -> Registered | None:
        same = _canonical(schema)
        return next((s for s in self.all if s.subject == subject and _canonical(s.schema) == same), None)

    def register(self, subject: str, schema: str) -> Registered:
        with self.lock:
            mine = self.find(subject, schema)
            if mine is not None:
                return mine
            same = _canonical(schema)
            other = next((s for s in self.all if _canonical(s.schema) == same), None)  # one id a schema
            schema_id = other.id if other else max((s.id for s in self.all), default=0) + 1
            version = 1 + max((s.version for s in self.all if s.subject == subject), default=0)
            added = Registered(subject, version, schema_id, schema)
            self.all.append(added)
            return added


def _canonical(schema: str) -> str:
    try:
        return json.dumps(json.loads(schema), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return schema


def answer(schemas: Schemas, method: str, path: str, body: dict | None) -> object:
    """The answer to one request, as Confluent's registry gives it; NotFound for what it does not hold."""
    parts = [p for p in path.split("?")[0].split("/") if p]
    if method == "GET":
        if parts == [] or parts == ["config"] or parts[:1] == ["config"]:
            return {} if not parts else {"compatibilityLevel": "BACKWARD"}
        if parts[:1] == ["mode"]:
            return {"mode": "READWRITE"}
        if parts == ["schemas", "types"]:
            return ["AVRO"]
        if parts == ["subjects"]:
            return sorted({s.subject for s in schemas.all})
        if len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
            return [s.version for s in schemas.subject(parts[1])]
        if len(parts) in (4, 5) and parts[0] == "subjects" and parts[2] == "versions":
            found = schemas.version(parts[1], parts[3])
            return found.answer() if len(parts) == 4 else json.loads(found.schema)
        if len(parts) >= 3 and parts[:2] == ["schemas", "ids"]:
            found = schemas.by_id(parts[2])
            rest = parts[3:]
            if rest == []:
                return {"schema": found[0].schema}
            if rest == ["schema"]:
                return json.loads(found[0].schema)
            if rest == ["subjects"]:
                return sorted({s.subject for s in found})
            if rest == ["versions"]:
                return [{"subject": s.subject, "version": s.version} for s in found]
    if method == "POST" and len(parts) in (2, 3) and parts[0] == "subjects" and body and "schema" in body:
        if len(parts) == 3 and parts[2] == "versions":
            return {"id": schemas.register(parts[1], body["schema"]).id}
        if len(parts) == 2:
            schemas.subject(parts[1])
            found = schemas.find(parts[1], body["schema"])
            if found is None:
                raise NotFound(40403, "Schema not found")
            return found.answer()
    raise NotFound(404, f"HTTP 404 Not Found: {method} {path}")


def serve(settings: RegistrySettings) -> None:
    schemas = Schemas(settings.schemas)
    log = open(settings.log, "a", buffering=1)
    log_lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def _reply(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length)) if length else None
                status, payload = 200, answer(schemas, method, self.path, body)
            except NotFound as exc:
                status = 404
                payload = {"error_code": exc.code, "message": str(exc)}
            except ValueError:
                status, payload = 422, {"error_code": 42201, "message": "Invalid schema"}
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            if self.headers.get(PROBE):
                return  # the harness asking whether it answers: not the job's
            line = {"ts_ms": int(time.time() * 1000), "method": method, "path": self.path, "status": status}
            with log_lock:
                log.write(json.dumps(line) + "\n")

        def do_GET(self) -> None:  # noqa: N802 (http.server's names)
            self._reply("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._reply("POST")

        def log_message(self, format: str, *args) -> None:  # the request log is the JSON lines
            pass

    server = ThreadingHTTPServer(("127.0.0.1", settings.port), Handler)
    server.daemon_threads = True
    print(f"schema registry on http://127.0.0.1:{settings.port}: {len(settings.schemas)} schema(s)", flush=True)
    server.serve_forever()


def main() -> None:
    serve(RegistrySettings.load(Path(sys.argv[1])))


if __name__ == "__main__":
    main()
