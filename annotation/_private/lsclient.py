"""A thin Label Studio client (label-studio-sdk 2.x) with the few calls the protocol needs, retries
with backoff on connection errors and 5xx, and one clear error when the server stays down.

A request that creates something is retried only after asking the server what it already holds:
a lost reply (a proxy that drops it, a timeout, a 5xx after the server committed) must not create
a second copy. The SDK's own retries are off, so ``_call`` is the one retry loop."""

from __future__ import annotations

import json
import random
import secrets
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, TypeVar

from benchsmith.schemas import RuntimeFault, UserError

T = TypeVar("T")
PAGE = 1000
ID_CHUNK = 400  # task ids per export request (they travel in the URL)
BY_ID_LIMIT = 2000
TITLE_MAX = 50  # Label Studio's limit on a project title
MARKER_BASE = 1 << 52  # annotate's markers: far above any annotation id, below 2**53 (exact in JSON numbers)


class LabelStudioDown(RuntimeFault):
    """Label Studio did not answer (after retries); everything synced so far is kept."""


@dataclass(frozen=True)
class RemoteTask:
    """A task as the server holds it: its id, its ``bs_*`` data fields, how many annotations it has
    (cancelled ones included) and its key (:func:`payloads.task_key`; None: not benchsmith's)."""

    id: int
    data: dict[str, Any]
    annotations: int
    key: str | None


@dataclass(frozen=True)
class RemoteProject:
    """A project as the server holds it: its id, title and number of tasks."""

    id: int
    title: str
    tasks: int


class LabelStudio:
    def __init__(self, url: str, token: str, *, timeout: float = 120.0, retries: int = 3, backoff: float = 0.5) -> None:
        from label_studio_sdk import LabelStudio as SDK

        self.url = url.rstrip("/")
        # max_retries=0: the SDK would otherwise repeat a POST whose reply was lost, blindly
        self._sdk = SDK(base_url=self.url, api_key=token, timeout=timeout, max_retries=0)
        self.retries = retries
        self.backoff = backoff
        self._rng = random.Random()

    # -- plumbing ------------------------------------------------------------------------------------
    def _call(self, what: str, fn: Callable[[], T], *, reconcile: Callable[[], None] | None = None) -> T:
        """``fn()``, retried with backoff and jitter on connection errors, timeouts and 5xx. A call that
        is not safe to repeat passes ``reconcile``: it runs before every retry, asks the server what
        the failed attempt left there, and narrows what ``fn`` still has to do."""
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
                    raise UserError(
                        f"Label Studio at {self.url} refused the token ({status}) while trying to {what}",
                        fix="set LABEL_STUDIO_API_KEY to a valid token (or use the local server)",
                    ) from None
                if status is None or status < 500:
                    body = json.dumps(exc.body)[:300] if exc.body is not None else ""
                    raise RuntimeFault(
                        f"Label Studio at {self.url} rejected the request to {what}: {status} {body}"
                    ) from None
                err = exc
            if attempt > self.retries:
                raise LabelStudioDown(
                    f"Label Studio at {self.url} is not answering ({type(err).__name__}"
                    f"{f' {status}' if status else ''}) while trying to {what}; everything synced so far "
                    "is kept, re-run the command when it is back"
                ) from None
            time.sleep(self._rng.uniform(0, self.backoff * 2 ** (attempt - 1)))
            if reconcile is not None:
                reconcile()

    def _delete(self, what: str, fn: Callable[[], None]) -> None:
        """A delete through :meth:`_call`; a 404 counts as done (maybe by our own attempt whose reply was lost)."""
        from label_studio_sdk.core.api_error import ApiError

        def delete() -> None:
            try:
                fn()
            except ApiError as exc:
                if exc.status_code != 404:
                    raise

        self._call(what, delete)

    # -- projects and tasks -----------------------------------------------------------------------------
    def create_project(self, title: str, label_config: str, *, maximum_annotations: int, description: str = "") -> int:
        """The id of the project titled ``title`` (at most 50 characters), created when the server holds
        none. The title is the key: callers make it unique (the workspace's titles name the workspace,
        stage, round and kind). Safe to repeat: before the first attempt and before every retry the
        projects with exactly this title are looked up, and one found is used, so a create whose reply
        was lost, or a push that died before recording the project, does not make a second one. After a
        retried create, copies that appeared anyway (a create the server finished late) and hold no
        tasks are deleted."""
        title = title[:TITLE_MAX]
        found: list[int] = []
        retried = False

        def held() -> None:
            found[:] = [p.id for p in self.projects_titled(title)][:1]

        def reconcile() -> None:
            nonlocal retried
            retried = True
            held()

        def create() -> int:
            if found:
                return found[0]
            p = self._sdk.projects.create(
                title=title,
                description=description,
                label_config=label_config,
                maximum_annotations=maximum_annotations,
                overlap_cohort_percentage=100,
                show_skip_button=False,
            )
            return int(p.id)

        held()
        pid = self._call("create a project", create, reconcile=reconcile)
        if retried:
            for p in self.projects_titled(title):
                if p.id != pid and not p.tasks:
                    self.delete_project(p.id)
        return pid

    def projects_titled(self, title: str) -> list[RemoteProject]:
        """The projects whose title is exactly ``title`` (ids ascending)."""

        def ask() -> list[RemoteProject]:  # the server filters by "contains", case-insensitive
            return [
                RemoteProject(int(p.id), p.title or "", int(p.task_number or 0))
                for p in self._sdk.projects.list(title=title, page_size=100)
            ]

        return sorted((p for p in self._call("list projects", ask) if p.title == title), key=lambda p: p.id)

    def delete_project(self, project_id: int) -> None:
        """Delete a project (its tasks go with it); one already gone counts as deleted."""
        self._delete("delete a project", lambda: self._sdk.projects.delete(id=project_id))

    def project_exists(self, project_id: int) -> bool:
        from label_studio_sdk.core.api_error import ApiError

        try:
            self._call("read a project", lambda: self._sdk.projects.get(id=project_id))
            return True
        except RuntimeFault as exc:
            if isinstance(exc.__cause__, ApiError) or " 404 " in str(exc):
                return False
            raise

    def tasks(self, project_id: int, stage: str | None = None, round: int | None = None) -> list[RemoteTask]:
        """Every task of the project (paged), with its key; ``stage`` / ``round`` are the project's
        (they key tasks pushed before the key had every field)."""
        from .payloads import task_key

        out: list[RemoteTask] = []
        page = 1
        while True:
            resp = self._call(
                "list tasks",
                lambda page=page: self._raw_get(
                    f"/api/tasks/?project={project_id}&page={page}&page_size={PAGE}&fields=task_only"
                ),
            )
            tasks = resp.get("tasks", []) if isinstance(resp, dict) else resp
            total = resp.get("total") if isinstance(resp, dict) else None
            for t in tasks:
                data = {k: v for k, v in (t.get("data") or {}).items() if k.startswith("bs_")}
                count = int(t.get("total_annotations") or 0) + int(t.get("cancelled_annotations") or 0)
                out.append(RemoteTask(int(t["id"]), data, count, task_key(data, stage, round)))
            if len(tasks) < PAGE or (isinstance(total, int) and page * PAGE >= total):
                return out
            page += 1

    def task_keys(self, project_id: int, stage: str | None = None, round: int | None = None) -> dict[str, list[int]]:
        """``{key: [task ids]}`` of the project's tasks (ids ascending; more than one is a duplicate):
        what the server holds, to reconcile after an interrupted push or a lost reply."""
        out: dict[str, list[int]] = {}
        for t in self.tasks(project_id, stage, round):
            if t.key is not None:
                out.setdefault(t.key, []).append(t.id)
        return {k: sorted(v) for k, v in out.items()}

    def import_tasks(
        self, project_id: int, tasks: list[dict[str, Any]], *, stage: str | None = None, round: int | None = None
    ) -> list[int]:
        """Import ``tasks`` (each with ``data.bs_id``; ``stage`` / ``round`` key the ones without
        ``bs_stage`` / ``bs_round``) and return their ids in order. Never imports a task twice: before
        a retry the project's tasks are listed and only the missing ones are sent again; after a
        retried import, copies that appeared anyway (an import the server finished late) and have no
        annotations are deleted."""
        from .payloads import task_key

        keys = [task_key(t.get("data") or {}, stage, round) for t in tasks]
        if None in keys or len(set(keys)) != len(keys):
            raise RuntimeFault(
                "every task to import needs its own data.bs_id (the key that makes an import safe to retry)"
            )
        ids: dict[str, int] = {}
        retried = False

        def send() -> list[int]:
            todo = [(k, t) for k, t in zip(keys, tasks) if k not in ids]
            if todo:
                resp = self._sdk.projects.import_tasks(
                    id=project_id, request=[t for _, t in todo], return_task_ids=True
                )
                ids.update(zip([k for k, _ in todo], self._imported_ids(resp, len(todo))))
            return [ids[k] for k in keys]

        def reconcile() -> None:
            nonlocal retried
            retried = True
            held = self.task_keys(project_id, stage, round)
            ids.update({k: held[k][0] for k in keys if k not in ids and k in held})

        out = self._call("import tasks", send, reconcile=reconcile)
        if retried:
            kept = dict(zip(keys, out))
            for t in self.tasks(project_id, stage, round):
                if t.key in kept and t.id != kept[t.key] and not t.annotations:
                    self.delete_task(t.id)
        return out

    @staticmethod
    def _imported_ids(resp: Any, n: int) -> list[int]:
        ids = getattr(resp, "task_ids", None)
        if ids is None:
            extra = getattr(resp, "model_extra", None) or {}
            ids = extra.get("task_ids")
        if ids is None or len(ids) != n:
            raise RuntimeFault(f"Label Studio did not return the ids of the {n} imported tasks")
        return [int(i) for i in ids]

    def delete_task(self, task_id: int) -> None:
        """Delete a task (its annotations go with it); one already gone counts as deleted."""
        self._delete("delete a task", lambda: self._sdk.tasks.delete(id=str(task_id)))

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
            chunk = ids[i : i + ID_CHUNK]
            out.extend(
                self._call(
                    "export annotations", lambda chunk=chunk: self._raw_get(base, params=[("ids", x) for x in chunk])
                )
            )
        return out

    # -- users and annotations ---------------------------------------------------------------------------
    def ensure_user(self, username: str) -> int:
        """The id of the user ``username``, created when missing (e-mail ``<username>@benchsmith.local``).
        Safe to repeat: before a retry of the creation the users are listed again, so a user whose
        creation reply was lost is found, not created twice; a create refused because the e-mail is
        taken (an earlier attempt the server finished late) is answered the same way."""
        from label_studio_sdk.core.api_error import ApiError

        found: list[int] = []

        def held() -> None:
            users = self._call("list users", lambda: self._raw_get("/api/users/"))
            found[:] = [int(u["id"]) for u in users if u.get("username") == username][:1]

        def create() -> int:
            if found:
                return found[0]
            try:
                u = self._sdk.users.create(username=username, email=f"{username}@benchsmith.local")
            except ApiError as exc:
                if exc.status_code != 400:
                    raise
                held()
                if not found:
                    raise
                return found[0]
            return int(u.id)

        held()
        return self._call("create a user", create, reconcile=held)

    def annotate(self, task_id: int, result: list[dict[str, Any]], user_id: int) -> int:
        """Post an annotation by ``user_id`` on the task. Safe to repeat: the annotation carries a marker
        of its own (``import_id``, a random number above any annotation id); before a retry the task's
        annotations are searched for it, so one whose reply was lost is not posted twice. After a retry,
        further annotations with the marker (a post the server finished late) are deleted."""
        marker = MARKER_BASE + secrets.randbits(52)
        found: list[int] = []
        retried = False

        def mine() -> list[int]:
            return sorted(
                int(a["id"])
                for a in self.task_annotations(task_id)
                if a.get("import_id") == marker and a.get("completed_by") == user_id
            )

        def reconcile() -> None:
            nonlocal retried
            retried = True
            found[:] = mine()[:1]

        def create() -> int:
            if found:
                return found[0]
            a = self._sdk.annotations.create(id=task_id, result=result, completed_by=user_id, import_id=marker)
            return int(a.id)

        aid = self._call("create an annotation", create, reconcile=reconcile)
        if retried:
            for other in mine():
                if other != aid:
                    self.delete_annotation(other)
        return aid

    def delete_annotation(self, annotation_id: int) -> None:
        """Delete an annotation; one already gone counts as deleted."""
        self._delete("delete an annotation", lambda: self._sdk.annotations.delete(id=annotation_id))

    def task_annotations(self, task_id: int) -> list[dict[str, Any]]:
        """The task's annotations (``id``, ``completed_by``, ``result``, ``was_cancelled``, ``import_id``, ...)."""
        anns = self._call("list annotations", lambda: self._sdk.annotations.list(id=task_id))
        return [a.model_dump(mode="json") for a in anns]

    def copy_annotation(self, annotation: dict[str, Any], task_id: int) -> int:
        """Copy an annotation (from :meth:`task_annotations`) onto another task: the same user, result and
        cancelled flag, ``import_id`` = the original's id. Safe to repeat: before a retry, and before
        the first attempt, the task's annotations are searched for that ``import_id``."""
        done: list[int] = []

        def held() -> None:
            copies = [int(a["id"]) for a in self.task_annotations(task_id) if a.get("import_id") == annotation["id"]]
            done[:] = copies[:1]

        def create() -> int:
            if done:
                return done[0]
            a = self._sdk.annotations.create(
                id=task_id,
                result=annotation.get("result") or [],
                completed_by=annotation.get("completed_by"),
                was_cancelled=bool(annotation.get("was_cancelled")),
                ground_truth=bool(annotation.get("ground_truth")),
                lead_time=annotation.get("lead_time"),
                import_id=int(annotation["id"]),
            )
            return int(a.id)

        held()
        return self._call("copy an annotation", create, reconcile=held)

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
