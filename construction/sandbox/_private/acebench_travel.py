"""The ACEBench-flavoured ``acebench_travel`` domain (ACEBench's ``Travel``): flights, users with
cash and bank balances and a membership level, and flight reservations.

ACEBench's semantics (see :mod:`.acebench_apps`): its method names, arguments and return values
(mostly plain sentences); a failed log-in or an unknown flight when booking is an error
(``authentication_failed``, ``unknown_flight``), other refusals are results. Free checked bags
depend on the membership level and the cabin; each further bag costs 50. A cancellation is
refunded in full when the airline cancelled the flight or departure is more than a day after the
state's ``now``, otherwise 90%. Exported state: ``users``, ``reservations``.

>>> from benchsmith.construction.sandbox import Sandbox
>>> sb = Sandbox({"acebench_travel": {}})
>>> sb.call("reserve_flight", {"user_id": "user1", "password": "password123", "flight_no": "CA1234",
...                            "cabin": "Economy Class", "payment_method": "bank", "baggage_count": 2})
'booked res_5, total 1250'
>>> sb.state()["acebench_travel"]["users"]["user1"]["bank_balance"]
48750.0
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import Field

from benchsmith.schemas import StrictModel, ToolError

from .acebench_apps import AceBenchDomain
from .engine import domain
from .tooling import tool

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
FREE_BAGS = {
    "regular": {"Economy Class": 1, "Business Class": 2},
    "silver": {"Economy Class": 2, "Business Class": 3},
    "gold": {"Economy Class": 3, "Business Class": 3},
}
BAG_FEE = 50


def _default_users() -> dict[str, dict[str, Any]]:
    return {
        "user1": {
            "user_name": "Eve",
            "password": "password123",
            "cash_balance": 2000.0,
            "bank_balance": 50000.0,
            "membership_level": "regular",
        },
        "user2": {
            "user_name": "Frank",
            "password": "password456",
            "cash_balance": 8000.0,
            "bank_balance": 8000.0,
            "membership_level": "silver",
        },
        "user3": {
            "user_name": "Grace",
            "password": "password789",
            "cash_balance": 1000.0,
            "bank_balance": 5000.0,
            "membership_level": "gold",
        },
    }


def _default_flights() -> list[dict[str, Any]]:
    rows = [
        ("CA1234", "Beijing", "Shanghai", "2024-07-15 08:00:00", "2024-07-15 10:30:00", 5, 1200, 3000),
        ("MU5678", "Shanghai", "Beijing", "2024-07-16 09:00:00", "2024-07-16 11:30:00", 3, 1900, 3000),
        ("CZ4321", "Shanghai", "Beijing", "2024-07-16 20:00:00", "2024-07-16 22:00:00", 8, 2500, 4000),
        ("CZ4352", "Shanghai", "Beijing", "2024-07-17 20:00:00", "2024-07-17 22:00:00", 8, 1600, 2500),
        ("MU3561", "Beijing", "Nanjing", "2024-07-18 08:00:00", "2024-07-18 10:00:00", 8, 1500, 4000),
        ("MU1566", "Beijing", "Nanjing", "2024-07-18 20:00:00", "2024-07-18 22:00:00", 8, 1500, 4000),
        ("CZ1765", "Nanjing", "Shenzhen", "2024-07-17 20:30:00", "2024-07-17 22:00:00", 8, 1500, 2500),
        ("CZ1765", "Nanjing", "Shenzhen", "2024-07-18 12:30:00", "2024-07-18 15:00:00", 8, 1500, 2500),
        ("MH1765", "Xiamen", "Chengdu", "2024-07-17 12:30:00", "2024-07-17 15:00:00", 8, 1500, 2500),
        ("MH2616", "Chengdu", "Xiamen", "2024-07-18 18:30:00", "2024-07-18 21:00:00", 8, 1500, 2500),
        ("MH2616", "Chengdu", "Fuzhou", "2024-07-16 18:30:00", "2024-07-16 21:00:00", 8, 1500, 2500),
    ]
    keys = (
        "flight_no",
        "origin",
        "destination",
        "depart_time",
        "arrival_time",
        "seats_available",
        "economy_price",
        "business_price",
    )
    return [dict(zip(keys, r), status="available") for r in rows]


def _default_reservations() -> list[dict[str, Any]]:
    rows = [
        ("res_1", "user1", "CA1234", "Economy Class", "Beijing", "Shanghai"),
        ("res_2", "user1", "MU5678", "Business Class", "Shanghai", "Beijing"),
        ("res_3", "user2", "MH1765", "Business Class", "Xiamen", "Chengdu"),
        ("res_4", "user2", "MU2616", "Business Class", "Chengdu", "Xiamen"),
    ]
    return [
        {
            "reservation_id": r,
            "user_id": u,
            "flight_no": f,
            "payment_method": "bank",
            "cabin": c,
            "baggage": 1,
            "origin": o,
            "destination": d,
        }
        for r, u, f, c, o, d in rows
    ]


class TravelState(StrictModel):
    """Users by id, the flights, the reservations and the current time (``YYYY-MM-DD HH:MM:SS``)."""

    users: dict[str, dict[str, Any]] = Field(default_factory=_default_users)
    flights: list[dict[str, Any]] = Field(default_factory=_default_flights)
    reservations: list[dict[str, Any]] = Field(default_factory=_default_reservations)
    now: str = "2024-07-14 06:00:00"


@domain("acebench_travel")
class AceBenchTravel(AceBenchDomain):
    """ACEBench's ``Travel``: flight search, booking, changes and cancellations."""

    State = TravelState
    state: TravelState
    acebench_class = "Travel"
    exported = ("users", "reservations")

    @tool
    def get_flight_details(self, origin: str | None = None, destination: str | None = None) -> Any:
        """List the direct flights, optionally only from an origin and/or to a destination.

        Args:
            origin: The departure city; any if omitted.
            destination: The arrival city; any if omitted.
        """
        found = [
            f
            for f in self.state.flights
            if (not origin or f["origin"] == origin) and (not destination or f["destination"] == destination)
        ]
        return [dict(f) for f in found] if found else "no direct flights"

    @tool
    def get_user_details(self, user_id: str, password: str) -> dict[str, Any]:
        """Show a user's name, balances and membership level (needs their password).

        Args:
            user_id: The user's id.
            password: The user's password.
        """
        u = self.state.users.get(user_id)
        if u and u["password"] == password:
            return {k: v for k, v in u.items() if k != "password"}
        return {"status": "error", "message": "wrong user id or password"}

    @tool
    def get_reservation_details(self, reservation_id: str | None = None, user_id: str | None = None) -> Any:
        """Show one reservation, or all of a user's reservations, with their flights.

        Args:
            reservation_id: The reservation's id (takes precedence).
            user_id: The user whose reservations to show.
        """
        st = self.state
        if reservation_id:
            found = [r for r in st.reservations if r["reservation_id"] == reservation_id]
        elif user_id:
            found = [r for r in st.reservations if r["user_id"] == user_id]
        else:
            return {"status": "error", "message": "give a reservation id or a user id"}
        return [
            {**r, "flight_info": next((f for f in st.flights if f["flight_no"] == r["flight_no"]), None)} for r in found
        ]

    @tool
    def find_transfer_flights(self, origin_city: str, transfer_city: str, destination_city: str) -> Any:
        """List pairs of available flights via a transfer city where the second leg departs after the first lands.

        Args:
            origin_city: The departure city.
            transfer_city: The city where the traveller changes planes.
            destination_city: The final arrival city.
        """
        flights = self.state.flights
        first = [
            f
            for f in flights
            if f["origin"] == origin_city and f["destination"] == transfer_city and f["status"] == "available"
        ]
        second = [
            f
            for f in flights
            if f["origin"] == transfer_city and f["destination"] == destination_city and f["status"] == "available"
        ]
        pairs = [
            {"first_leg": a, "second_leg": b}
            for a in first
            for b in second
            if datetime.strptime(a["arrival_time"], TIME_FORMAT) < datetime.strptime(b["depart_time"], TIME_FORMAT)
        ]
        return pairs or "no connecting flights"

    @staticmethod
    def _pay(user: dict[str, Any], method: str, amount: float) -> bool:
        key = {"cash": "cash_balance", "bank": "bank_balance"}.get(method)
        if key is None:
            return True
        if user[key] + amount < 0:
            return False
        user[key] += amount
        return True

    @tool
    def reserve_flight(
        self, user_id: str, password: str, flight_no: str, cabin: str, payment_method: str, baggage_count: int
    ) -> str:
        """Book a seat on an available flight, paying the fare and any extra bags from cash or bank.

        Args:
            user_id: The user's id.
            password: The user's password.
            flight_no: The flight number.
            cabin: "Economy Class" or "Business Class".
            payment_method: "cash" or "bank".
            baggage_count: How many bags to check in.
        """
        st = self.state
        user = st.users.get(user_id)
        if not user or user["password"] != password:
            raise ToolError("authentication failed", code="authentication_failed")
        flight = next((f for f in st.flights if f["flight_no"] == flight_no and f["status"] == "available"), None)
        if flight is None:
            raise ToolError(f"no available flight {flight_no}", code="unknown_flight")
        cost = flight["economy_price"] if cabin == "Economy Class" else flight["business_price"]
        free = FREE_BAGS[user["membership_level"]].get(cabin)
        if free is None:
            raise ToolError(f"unknown cabin {cabin}", code="unknown_cabin")
        cost += max(baggage_count - free, 0) * BAG_FEE
        if payment_method not in ("cash", "bank"):
            return "invalid payment method"
        key = payment_method + "_balance"
        if cost > user[key]:
            return "insufficient balance"
        user[key] -= cost
        flight["seats_available"] -= 1
        rid = f"res_{len(st.reservations) + 1}"
        st.reservations.append(
            {
                "reservation_id": rid,
                "user_id": user_id,
                "flight_no": flight_no,
                "payment_method": payment_method,
                "cabin": cabin,
                "baggage": baggage_count,
            }
        )
        return f"booked {rid}, total {cost}"

    @tool
    def modify_flight(
        self,
        user_id: str,
        reservation_id: str,
        new_flight_no: str | None = None,
        new_cabin: str | None = None,
        add_baggage: int = 0,
        new_payment_method: str | None = None,
    ) -> str:
        """Change a reservation: another flight on the same route, another cabin (the fare difference is
        paid or refunded) and/or more bags.

        Args:
            user_id: The user's id.
            reservation_id: The reservation's id.
            new_flight_no: The new flight number (same origin and destination).
            new_cabin: The new cabin.
            add_baggage: How many bags to add.
            new_payment_method: "cash" or "bank" for what this change costs; the reservation's own if omitted.
        """
        st = self.state
        res = next(
            (r for r in st.reservations if r["reservation_id"] == reservation_id and r["user_id"] == user_id), None
        )
        if res is None:
            return "reservation not found"
        current = next((f for f in st.flights if f["flight_no"] == res["flight_no"]), None)
        if current is None:
            return "flight not found"
        method = new_payment_method or res["payment_method"]
        user = st.users[user_id]
        if new_flight_no and new_flight_no != res["flight_no"]:
            new = next((f for f in st.flights if f["flight_no"] == new_flight_no), None)
            if not new or new["origin"] != current["origin"] or new["destination"] != current["destination"]:
                return "flight change failed"
            res["flight_no"] = new_flight_no
        if new_cabin and new_cabin != res.get("cabin"):
            prices = {"Economy Class": current["economy_price"], "Business Class": current["business_price"]}
            diff = prices.get(new_cabin, 0) - prices.get(res["cabin"], 0)
            res["cabin"] = new_cabin
            if diff:
                self._pay(user, method, -diff)
        if add_baggage > 0:
            free = FREE_BAGS.get(user["membership_level"], {}).get(res["cabin"], 0)
            total = res.get("baggage", 0) + add_baggage
            fee = max(0, total - free) * BAG_FEE
            if fee > 0:
                self._pay(user, method, -fee)
            res["baggage"] = total
        return "modified"

    @tool
    def cancel_reservation(self, user_id: str, reservation_id: str, reason: str) -> str:
        """Cancel a reservation and refund its fare in cash (minus 10% within a day of departure,
        unless the airline cancelled the flight).

        Args:
            user_id: The user's id.
            reservation_id: The reservation's id.
            reason: Why the reservation is cancelled.
        """
        st = self.state
        now = datetime.strptime(st.now, TIME_FORMAT)
        user = st.users.get(user_id)
        if not user:
            return "invalid user id"
        res = next(
            (r for r in st.reservations if r["reservation_id"] == reservation_id and r["user_id"] == user_id), None
        )
        if res is None:
            return "invalid reservation id"
        flight = next((f for f in st.flights if f["flight_no"] == res["flight_no"]), None)
        if flight is None:
            return "invalid flight"
        depart = datetime.strptime(flight["depart_time"], TIME_FORMAT)
        if now > depart:
            return "flight already used"
        price = flight["economy_price"] if res["cabin"] == "Economy Class" else flight["business_price"]
        if reason == "The airline has canceled the flight." or depart - now > timedelta(days=1):
            user["cash_balance"] += price
        else:
            user["cash_balance"] += price - price * 0.1
        return "cancelled"
