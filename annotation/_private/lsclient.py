"""A thin Label Studio client (label-studio-sdk 2.x) with the few calls the protocol needs, retries
with backoff on connection errors and 5xx, and one clear error when the server stays down."""

from __future__ import annotations

import json
import random
import time
from typing import Any, Callable, Iterable, TypeVar

from benchsmith.schemas import RuntimeFault, UserError

T = TypeVar("T")
PAGE = 1000
ID_CHUNK = 400  # task ids per export request (they travel in the URL)
BY_ID_LIMIT = 2000


class LabelStudioDown(RuntimeFault):
    """Label Studio did not answer (after retries); everything synced so far is kept."""


class LabelStudio:
    def __init__(self, url: str, token: str, *, timeout: float = 120.0, retries: int = 3, backoff: float = 0.5) -> None:
        from label_studio_sdk import LabelStudio as SDK

        self.url = url.rstrip("/")
        self._sdk = SDK(base_url=self.url, api_key=token, timeout=timeout)
        self.retries = retries
        self.backoff = backoff
        self._rng = random.Random()

    # -- plumbing ------------------------------------------------------------------------------------
    def _call(self, what: str, fn: Callable[[], T]) -> T:
        import httpx
        from label_studio_sdk.core.api_error import ApiError

        attempt = 0
        while True:
            attempt += 1
            try:
                return fn()
            except (httpx.TransportError, httpx.TimeoutException) as exc:
                err: Exception = exc
                status = None
            except ApiError as exc:
                status = exc.status_code
                if status in (401, 403):
                    raise UserError(f"Label Studio at {self.url} refused the token ({status}) while trying to {what}",
                                    fix="set LABEL_STUDIO_API_KEY to a valid token (or use the local server)") from None
                if status is None or status < 500:
                    body = json.dumps(exc.body)[:300] if exc.body is not None else ""
                    raise RuntimeFault(f"Label Studio at {self.url} rejected the request to {what}: {status} {body}") from None
                err = exc
            if attempt > self.retries:
                raise LabelStudioDown(f"Label Studio at {self.url} is not answering ({type(err).__name__}"
                                      f"{f' {status}' if status else ''}) while trying to {what}; everything synced so far "
                                      "is kept, re-run the command when it is back") from None
            time.sleep(self._rng.uniform(0, self.backoff * 2 ** (attempt - 1)))

    # -- projects and tasks -----------------------------------------------------------------------------
    def create_project(self, title: str, label_config: str, *, maximum_annotations: int, description: str = "") -> int:
        p = self._call("create a project", lambda: self._sdk.projects.create(
            title=title[:50], description=description, label_config=label_config,
            maximum_annotations=maximum_annotations, overlap_cohort_percentage=100, show_skip_button=False))
        return int(p.id)

    def project_exists(self, project_id: int) -> bool:
        from label_studio_sdk.core.api_error import ApiError

        try:
            self._call("read a project", lambda: self._sdk.projects.get(id=project_id))
            return True
        except RuntimeFault as exc:
            if isinstance(exc.__cause__, ApiError) or " 404 " in str(exc):
                return False
            raise

    def task_keys(self, project_id: int, key: str = "bs_id") -> dict[str, int]:
        """``{data[key]: task id}`` of every task in the project (to reconcile after an interrupted push)."""
        out: dict[str, int] = {}
        page = 1
        while True:
            resp = self._call("list tasks", lambda: self._raw_get(f"/api/tasks/?project={project_id}&page={page}"
                                                                 f"&page_size={PAGE}&fields=task_only"))
            tasks = resp.get("tasks", []) if isinstance(resp, dict) else resp
            total = resp.get("total") if isinstance(resp, dict) else None
            for t in tasks:
                value = (t.get("data") or {}).get(key)
                if value is not None:
                    out[str(value)] = int(t["id"])
            if len(tasks) < PAGE or (isinstance(total, int) and page * PAGE >= total):
                return out
            page += 1

    def import_tasks(self, project_id: int, tasks: list[dict[str, Any]]) -> list[int]:
        resp = self._call("import tasks", lambda: self._sdk.projects.import_tasks(id=project_id, request=tasks,
                                                                                  return_task_ids=True))
        ids = getattr(resp, "task_ids", None)
        if ids is None:
            extra = getattr(resp, "model_extra", None) or {}
            ids = extra.get("task_ids")
        if ids is None or len(ids) != len(tasks):
            raise RuntimeFault(f"Label Studio did not return the ids of the {len(tasks)} imported tasks")
        return [int(i) for i in ids]

    def annotated_tasks(self, project_id: int, task_ids: Iterable[int]) -> list[dict[str, Any]]:
        """The given tasks that have annotations, with their annotations (JSON export). Few tasks are
        asked for by id (in chunks, so only what is still open travels); many at once come from one
        export of the project's annotated tasks, filtered here."""
        ids = sorted(set(int(t) for t in task_ids))
        if not ids:
            return []
        base = f"/api/projects/{project_id}/export?exportType=JSON&download_all_tasks=false"
        if len(ids) > BY_ID_LIMIT:
            wanted = set(ids)
            every = self._call("export annotations", lambda: self._raw_get(base))
            return [t for t in every if int(t["id"]) in wanted]
        out: list[dict[str, Any]] = []
        for i in range(0, len(ids), ID_CHUNK):
            chunk = ids[i:i + ID_CHUNK]
            out.extend(self._call("export annotations", lambda: self._raw_get(base, params=[("ids", x) for x in chunk])))
        return out

    # -- users and annotations ---------------------------------------------------------------------------
    def ensure_user(self, username: str) -> int:
        users = self._call("list users", lambda: self._raw_get("/api/users/"))
        for u in users:
            if u.get("username") == username:
                return int(u["id"])
        u = self._call("create a user", lambda: self._sdk.users.create(username=username, email=f"{username}@benchsmith.local"))
        return int(u.id)

    def annotate(self, task_id: int, result: list[dict[str, Any]], user_id: int) -> int:
        a = self._call("create an annotation", lambda: self._sdk.annotations.create(id=task_id, result=result,
                                                                                    completed_by=user_id))
        return int(a.id)

    # -- raw HTTP through the SDK's own client (auth headers, base URL) ---------------------------------
    def _raw_get(self, path: str, params: list[tuple[str, Any]] | None = None) -> Any:
        wrapper = self._sdk._client_wrapper
        r = wrapper.httpx_client.httpx_client.get(self.url + path, headers=wrapper.get_headers(), params=params)
        return self._json(r)

    @staticmethod
    def _json(r: Any) -> Any:
        from label_studio_sdk.core.api_error import ApiError

        if r.status_code >= 400:
            raise ApiError(status_code=r.status_code, body=r.text[:300], headers=dict(r.headers))
        return r.json()
