"""Agent family: a small sandbox of ACEBench's scenario classes, replay of a call sequence, and
the end-state / process comparisons.

The scenario classes are benchsmith's own implementation of the behaviour the benchmark
describes (a phone with Wi-Fi and log-in, messages, reminders, a food platform, and a travel
agency); their initial data is what the EN gold end states imply. Each involved class gets
its own instance; a call goes to every involved instance that has a method of that name (the
phone classes share the Wi-Fi and log-in methods), as in the benchmark's executor. A call that
fails (unknown method, bad arguments, a failing lookup) stops the rest of its turn.

Exported state per class (what the gold end states hold): BaseApi ``wifi``, ``logged_in``;
MessageApi ``inbox``; ReminderApi ``reminder_list``; FoodPlatform ``users``,
``logged_in_users``, ``orders``; Travel ``users``, ``reservations``. States are JSON round-tripped
(integer keys become strings) before comparison.

A prediction may also carry the official inference record's end state (``result``); official
mode grades that state as reported (the official evaluator executes nothing), strict mode
always grades the replay of the calls (see :func:`parse_prediction`).
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta
from typing import Any

from benchsmith.eval._private.core import check_time

from ._decode import DecodeError, decode_strict, official_agent_turn


class SandboxError(Exception):
    """A call failed inside the sandbox (its turn stops)."""


# ---- scenario classes -------------------------------------------------------------------------
class BaseApi:
    EXPORT: tuple[str, ...] = ("wifi", "logged_in")

    def __init__(self) -> None:
        self.wifi = False
        self.logged_in = True

    def _load(self, config: dict[str, Any]) -> None:
        self.wifi = config.get("wifi", False)
        self.logged_in = config.get("logged_in", True)

    def turn_on_wifi(self) -> dict[str, Any]:
        self.wifi = True
        return {"status": True, "message": "Wi-Fi is on"}

    def login_device(self) -> dict[str, Any]:
        self.logged_in = True
        return {"status": True, "message": "device logged in"}


_PEOPLE = ("Eve", "Frank", "Grace", "Helen", "Isaac", "Jack")


class MessageApi(BaseApi):
    EXPORT = ("inbox",)
    CAPACITY = 6

    def __init__(self) -> None:
        super().__init__()
        self.user_ids = {name: f"USR{100 + i}" for i, name in enumerate(_PEOPLE)}
        rows = [
            ("USR100", "USR101", "Hey Frank, don't forget about our meeting on 2024-06-11 at 4 PM in Conference Room 1.",
             "2024-06-09"),
            ("USR101", "USR102", 'Can you help me order a "Margherita Pizza" delivery? The merchant is Domino\'s.',
             "2024-03-09"),
            ("USR102", "USR103", "Please check the milk tea delivery options available from Heytea and purchase a "
             "cheaper milk tea for me. After making the purchase, remember to reply to me with \"Already bought.\"",
             "2023-12-05"),
            ("USR103", "USR102", "No problem Helen, I can assist you.", "2024-09-09"),
            ("USR104", "USR105", "Isaac, are you available for a call?", "2024-06-06"),
            ("USR105", "USR104", "Yes Jack, let's do it in 30 minutes.", "2024-01-15"),
        ]
        self.inbox: dict[int, dict[str, Any]] = {
            i: {"sender_id": s, "receiver_id": r, "message": m, "time": t} for i, (s, r, m, t) in enumerate(rows, 1)}
        self.counter = len(rows)

    def send_message(self, sender_name: str, receiver_name: str, message: str) -> dict[str, Any]:
        if not self.logged_in:
            return {"status": False, "message": "device not logged in"}
        if not self.wifi:
            return {"status": False, "message": "Wi-Fi is off"}
        if len(self.inbox) >= self.CAPACITY:
            return {"status": False, "message": "inbox full: ask the user which message to delete"}
        if sender_name not in self.user_ids or receiver_name not in self.user_ids:
            return {"status": False, "message": "unknown sender or receiver"}
        self.counter += 1
        self.inbox[self.counter] = {"sender_id": self.user_ids[sender_name],
                                    "receiver_id": self.user_ids[receiver_name], "message": message}
        return {"status": True, "message": f"sent to {receiver_name}"}

    def delete_message(self, message_id: int) -> dict[str, Any]:
        if not self.logged_in:
            return {"status": False, "message": "device not logged in"}
        if message_id not in self.inbox:
            return {"status": False, "message": "no such message id"}
        del self.inbox[message_id]
        return {"status": True, "message": f"message {message_id} deleted"}

    def view_messages_between_users(self, sender_name: str, receiver_name: str) -> dict[str, Any]:
        if not self.logged_in:
            return {"status": False, "message": "device not logged in"}
        if sender_name not in self.user_ids or receiver_name not in self.user_ids:
            return {"status": False, "message": "unknown user"}
        s, r = self.user_ids[sender_name], self.user_ids[receiver_name]
        found = [{"id": i, "sender": sender_name, "receiver": receiver_name, "message": m["message"]}
                 for i, m in self.inbox.items() if m["sender_id"] == s and m["receiver_id"] == r]
        return {"status": True, "messages": found} if found else {"status": False, "message": "no messages"}

    def search_messages(self, user_name: str, keyword: str) -> dict[str, Any]:
        if user_name not in self.user_ids:
            return {"status": False, "message": "unknown user"}
        uid = self.user_ids[user_name]
        found = [{"id": i, **m} for i, m in self.inbox.items()
                 if uid in (m["sender_id"], m["receiver_id"]) and str(keyword).lower() in m["message"].lower()]
        return {"status": True, "messages": found} if found else {"status": False, "message": "nothing found"}

    def get_all_message_times_with_ids(self) -> dict[str, Any]:
        if not self.logged_in:
            return {"status": False, "message": "device not logged in"}
        return {i: m["time"] for i, m in self.inbox.items()}

    def _extreme(self, latest: bool) -> dict[str, Any]:
        if not self.logged_in:
            return {"status": False, "message": "device not logged in"}
        if not self.inbox:
            return {"status": False, "message": "no messages"}
        best_id, best = None, None
        for i, m in self.inbox.items():
            if "time" not in m:
                raise SandboxError(f"message {i} has no time")
            t = datetime.strptime(m["time"], "%Y-%m-%d")
            if best is None or (t > best if latest else t < best):
                best_id, best = i, t
        return {"status": True, "message_id": best_id}

    def get_latest_message_id(self) -> dict[str, Any]:
        return self._extreme(True)

    def get_earliest_message_id(self) -> dict[str, Any]:
        return self._extreme(False)


class ReminderApi(BaseApi):
    EXPORT = ("reminder_list",)
    CAPACITY = 6

    def __init__(self) -> None:
        super().__init__()
        self.reminder_list: dict[int, dict[str, Any]] = {
            1: {"reminder_id": 1001, "title": "Doctor's Appointment", "description": "Visit Dr. Smith for a checkup.",
                "time": "2024-07-15 09:30", "notified": False},
            2: {"reminder_id": 1002, "title": "Team Meeting", "description": "Monthly project review with the team.",
                "time": "2024-07-17 11:00", "notified": False},
            3: {"reminder_id": 1003, "title": "To-do list",
                "description": 'First, help Frank place a food delivery order at "Hema Fresh," ordering two "Fresh Gift '
                               'Packs." Then, send a message to Frank saying, "The price of the purchased goods is () '
                               'yuan." Replace the parentheses with the actual amount, keeping one decimal place.',
                "time": "2024-07-16 11:00", "notified": False},
        }
        self.counter = 3

    def view_reminder_by_title(self, title: str) -> dict[str, Any]:
        if not self.logged_in:
            return {"status": False, "message": "device not logged in"}
        for r in self.reminder_list.values():
            if r["title"] == title:
                return {"status": True, "reminder": r}
        return {"status": False, "message": f"no reminder titled {title!r}"}

    def add_reminder(self, title: str, description: str, time: str) -> dict[str, Any]:
        if not self.logged_in:
            return {"status": False, "message": "device not logged in"}
        if len(self.reminder_list) >= self.CAPACITY:
            return {"status": False, "message": "reminder list full"}
        self.counter += 1
        self.reminder_list[self.counter] = {"reminder_id": self.counter, "title": title, "description": description,
                                            "time": time, "notified": False}
        return {"status": True, "message": f"reminder {title!r} added"}

    def delete_reminder(self, reminder_id: int) -> dict[str, Any]:
        if not self.logged_in:
            return {"status": False, "message": "device not logged in"}
        if reminder_id not in self.reminder_list:
            return {"status": False, "message": "no such reminder"}
        del self.reminder_list[reminder_id]
        return {"status": True, "message": f"reminder {reminder_id} deleted"}

    def view_all_reminders(self) -> dict[str, Any]:
        if not self.reminder_list:
            return {"status": False, "message": "no reminders"}
        return {"status": True, "reminders": [
            {k: r[k] for k in ("title", "description", "time", "notified")} for r in self.reminder_list.values()]}

    def search_reminders(self, keyword: str) -> dict[str, Any]:
        kw = str(keyword).lower()
        found = [r for r in self.reminder_list.values() if kw in r["title"].lower() or kw in r["description"].lower()]
        return {"status": True, "reminders": found} if found else {"status": False, "message": "nothing found"}


class FoodPlatform(BaseApi):
    EXPORT = ("users", "logged_in_users", "orders")

    def __init__(self) -> None:
        super().__init__()
        balances = (500.0, 300.0, 150.0, 800.0, 400.0, 120.0)
        passwords = ("password123", "password456", "password789", "password321", "password654", "password654")
        self.users: dict[str, dict[str, Any]] = {
            n: {"user_id": f"U{100 + i}", "password": passwords[i], "balance": balances[i]} for i, n in enumerate(_PEOPLE)}
        self.merchants: dict[str, list[tuple[str, float]]] = {
            "Domino's": [("Margherita Pizza", 68.0), ("Super Supreme Pizza", 88.0)],
            "Rice Village Bibimbap": [("Stone Pot Bibimbap", 35.0), ("Korean Beef Bibimbap", 45.0)],
            "Haidilao": [("Beef Rolls", 68.0), ("Seafood Platter", 88.0)],
            "Heytea": [("Cheese Milk Tea", 25.0), ("Four Seasons Spring Milk Tea", 22.0)],
            "Hema Fresh": [("Organic Vegetable Pack", 15.0), ("Fresh Gift Pack", 99.0)],
            "Jiutian BBQ": [("Korean Grilled Beef", 128.0), ("Grilled Pork Belly", 78.0)],
        }
        self.logged_in_users: list[str] = []
        self.orders: list[dict[str, Any]] = []

    def _load(self, config: dict[str, Any]) -> None:
        super()._load(config)
        self.logged_in_users = list(config.get("logged_in_users", []))

    def login_food_platform(self, username: str, password: str) -> dict[str, Any]:
        if not self.wifi:
            return {"status": False, "message": "Wi-Fi is off"}
        if username not in self.users:
            return {"status": False, "message": "unknown user"}
        if self.users[username]["password"] != password:
            return {"status": False, "message": "wrong password"}
        if username in self.logged_in_users:
            return {"status": False, "message": "already logged in"}
        self.logged_in_users.append(username)
        return {"status": True, "message": f"{username} logged in"}

    def view_logged_in_users(self) -> dict[str, Any]:
        return {"status": bool(self.logged_in_users), "logged_in_users": self.logged_in_users}

    def check_balance(self, user_name: str) -> float:
        return self.users[user_name]["balance"] if user_name in self.users else 0.0

    def add_food_delivery_order(self, username: str, merchant_name: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        if username not in self.logged_in_users:
            return {"status": False, "message": "user not logged in to the platform"}
        if merchant_name not in self.merchants:
            return {"status": False, "message": "unknown merchant"}
        total, lines = 0.0, []
        for item in items:
            if not isinstance(item, dict):
                raise SandboxError("order item is not an object")
            product, qty = item.get("product"), item.get("quantity", 1)
            if not isinstance(qty, int) or qty <= 0:
                return {"status": False, "message": f"invalid quantity {qty}"}
            price = next((p for name, p in self.merchants[merchant_name] if name == product), None)
            if price is None:
                return {"status": False, "message": f"{product} is not on the menu"}
            total += price * qty
            lines.append({"product": product, "quantity": qty, "price_per_unit": price})
        if total > self.users[username]["balance"]:
            return {"status": False, "message": "insufficient balance"}
        self.users[username]["balance"] -= total
        self.orders.append({"user_name": username, "merchant_name": merchant_name, "items": lines, "total_price": total})
        return {"status": True, "message": f"ordered, total {total}"}

    def get_products(self, merchant_name: str) -> Any:
        if merchant_name not in self.merchants:
            return {"status": False, "message": "unknown merchant"}
        return [{"product": n, "price": p} for n, p in self.merchants[merchant_name]]

    def view_orders(self, user_name: str) -> dict[str, Any]:
        mine = [o for o in self.orders if o["user_name"] == user_name]
        return {"status": True, "orders": mine} if mine else {"status": False, "message": "no orders"}

    def search_orders(self, keyword: str) -> dict[str, Any]:
        kw = str(keyword).lower()
        found = [o for o in self.orders if kw in o["merchant_name"].lower()
                 or any(kw in i["product"].lower() for i in o["items"])]
        return {"status": True, "orders": found} if found else {"status": False, "message": "nothing found"}


_FREE_BAGS = {"regular": {"Economy Class": 1, "Business Class": 2}, "silver": {"Economy Class": 2, "Business Class": 3},
              "gold": {"Economy Class": 3, "Business Class": 3}}


class Travel:
    EXPORT = ("users", "reservations")

    def __init__(self) -> None:
        self.users = {
            "user1": {"user_name": "Eve", "password": "password123", "cash_balance": 2000.0, "bank_balance": 50000.0,
                      "membership_level": "regular"},
            "user2": {"user_name": "Frank", "password": "password456", "cash_balance": 8000.0, "bank_balance": 8000.0,
                      "membership_level": "silver"},
            "user3": {"user_name": "Grace", "password": "password789", "cash_balance": 1000.0, "bank_balance": 5000.0,
                      "membership_level": "gold"},
        }
        rows = [("CA1234", "Beijing", "Shanghai", "2024-07-15 08:00:00", "2024-07-15 10:30:00", 5, 1200, 3000),
                ("MU5678", "Shanghai", "Beijing", "2024-07-16 09:00:00", "2024-07-16 11:30:00", 3, 1900, 3000),
                ("CZ4321", "Shanghai", "Beijing", "2024-07-16 20:00:00", "2024-07-16 22:00:00", 8, 2500, 4000),
                ("CZ4352", "Shanghai", "Beijing", "2024-07-17 20:00:00", "2024-07-17 22:00:00", 8, 1600, 2500),
                ("MU3561", "Beijing", "Nanjing", "2024-07-18 08:00:00", "2024-07-18 10:00:00", 8, 1500, 4000),
                ("MU1566", "Beijing", "Nanjing", "2024-07-18 20:00:00", "2024-07-18 22:00:00", 8, 1500, 4000),
                ("CZ1765", "Nanjing", "Shenzhen", "2024-07-17 20:30:00", "2024-07-17 22:00:00", 8, 1500, 2500),
                ("CZ1765", "Nanjing", "Shenzhen", "2024-07-18 12:30:00", "2024-07-18 15:00:00", 8, 1500, 2500),
                ("MH1765", "Xiamen", "Chengdu", "2024-07-17 12:30:00", "2024-07-17 15:00:00", 8, 1500, 2500),
                ("MH2616", "Chengdu", "Xiamen", "2024-07-18 18:30:00", "2024-07-18 21:00:00", 8, 1500, 2500),
                ("MH2616", "Chengdu", "Fuzhou", "2024-07-16 18:30:00", "2024-07-16 21:00:00", 8, 1500, 2500)]
        keys = ("flight_no", "origin", "destination", "depart_time", "arrival_time", "seats_available",
                "economy_price", "business_price")
        self.flights = [dict(zip(keys, r), status="available") for r in rows]
        res = [("res_1", "user1", "CA1234", "Economy Class", "Beijing", "Shanghai"),
               ("res_2", "user1", "MU5678", "Business Class", "Shanghai", "Beijing"),
               ("res_3", "user2", "MH1765", "Business Class", "Xiamen", "Chengdu"),
               ("res_4", "user2", "MU2616", "Business Class", "Chengdu", "Xiamen")]
        self.reservations = [{"reservation_id": r, "user_id": u, "flight_no": f, "payment_method": "bank", "cabin": c,
                              "baggage": 1, "origin": o, "destination": d} for r, u, f, c, o, d in res]

    def _load(self, config: dict[str, Any]) -> None:
        pass

    def get_flight_details(self, origin: str | None = None, destination: str | None = None) -> Any:
        found = [f for f in self.flights if (not origin or f["origin"] == origin)
                 and (not destination or f["destination"] == destination)]
        return [dict(f) for f in found] if found else "no direct flights"

    def get_user_details(self, user_id: str, password: str) -> dict[str, Any]:
        u = self.users.get(user_id)
        if u and u["password"] == password:
            return {k: v for k, v in u.items() if k != "password"}
        return {"status": "error", "message": "wrong user id or password"}

    def get_reservation_details(self, reservation_id: str | None = None, user_id: str | None = None) -> Any:
        if reservation_id:
            found = [r for r in self.reservations if r["reservation_id"] == reservation_id]
        elif user_id:
            found = [r for r in self.reservations if r["user_id"] == user_id]
        else:
            return {"status": "error", "message": "give a reservation id or a user id"}
        return [{**r, "flight_info": next((f for f in self.flights if f["flight_no"] == r["flight_no"]), None)}
                for r in found]

    def find_transfer_flights(self, origin_city: str, transfer_city: str, destination_city: str) -> Any:
        fmt = "%Y-%m-%d %H:%M:%S"
        first = [f for f in self.flights if f["origin"] == origin_city and f["destination"] == transfer_city
                 and f["status"] == "available"]
        second = [f for f in self.flights if f["origin"] == transfer_city and f["destination"] == destination_city
                  and f["status"] == "available"]
        pairs = [{"first_leg": a, "second_leg": b} for a in first for b in second
                 if datetime.strptime(a["arrival_time"], fmt) < datetime.strptime(b["depart_time"], fmt)]
        return pairs or "no connecting flights"

    def _pay(self, user: dict[str, Any], method: str, amount: float) -> bool:
        key = {"cash": "cash_balance", "bank": "bank_balance"}.get(method)
        if key is None:
            return True
        if user[key] + amount < 0:
            return False
        user[key] += amount
        return True

    def reserve_flight(self, user_id: str, password: str, flight_no: str, cabin: str, payment_method: str,
                       baggage_count: int) -> str:
        user = self.users.get(user_id)
        if not user or user["password"] != password:
            raise SandboxError("authentication failed")
        flight = next((f for f in self.flights if f["flight_no"] == flight_no and f["status"] == "available"), None)
        if flight is None:
            raise SandboxError(f"no available flight {flight_no}")
        cost = flight["economy_price"] if cabin == "Economy Class" else flight["business_price"]
        free = _FREE_BAGS[user["membership_level"]].get(cabin)
        if free is None:
            raise SandboxError(f"unknown cabin {cabin}")
        cost += max(baggage_count - free, 0) * 50
        if payment_method not in ("cash", "bank"):
            return "invalid payment method"
        key = payment_method + "_balance"
        if cost > user[key]:
            return "insufficient balance"
        user[key] -= cost
        flight["seats_available"] -= 1
        rid = f"res_{len(self.reservations) + 1}"
        self.reservations.append({"reservation_id": rid, "user_id": user_id, "flight_no": flight_no,
                                  "payment_method": payment_method, "cabin": cabin, "baggage": baggage_count})
        return f"booked {rid}, total {cost}"

    def modify_flight(self, user_id: str, reservation_id: str, new_flight_no: str | None = None,
                      new_cabin: str | None = None, add_baggage: int = 0, new_payment_method: str | None = None) -> str:
        res = next((r for r in self.reservations if r["reservation_id"] == reservation_id and r["user_id"] == user_id),
                   None)
        if res is None:
            return "reservation not found"
        current = next((f for f in self.flights if f["flight_no"] == res["flight_no"]), None)
        if current is None:
            return "flight not found"
        method = new_payment_method or res["payment_method"]
        user = self.users[user_id]
        if new_flight_no and new_flight_no != res["flight_no"]:
            new = next((f for f in self.flights if f["flight_no"] == new_flight_no), None)
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
            free = _FREE_BAGS.get(user["membership_level"], {}).get(res["cabin"], 0)
            total = res.get("baggage", 0) + add_baggage
            fee = max(0, total - free) * 50
            if fee > 0:
                self._pay(user, method, -fee)
            res["baggage"] = total
        return "modified"

    def cancel_reservation(self, user_id: str, reservation_id: str, reason: str) -> str:
        now = datetime(2024, 7, 14, 6, 0, 0)
        user = self.users.get(user_id)
        if not user:
            return "invalid user id"
        res = next((r for r in self.reservations if r["reservation_id"] == reservation_id and r["user_id"] == user_id),
                   None)
        if res is None:
            return "invalid reservation id"
        flight = next((f for f in self.flights if f["flight_no"] == res["flight_no"]), None)
        if flight is None:
            return "invalid flight"
        depart = datetime.strptime(flight["depart_time"], "%Y-%m-%d %H:%M:%S")
        if now > depart:
            return "flight already used"
        price = flight["economy_price"] if res["cabin"] == "Economy Class" else flight["business_price"]
        if reason == "The airline has canceled the flight." or depart - now > timedelta(days=1):
            user["cash_balance"] += price
        else:
            user["cash_balance"] += price - price * 0.1
        return "cancelled"


SCENARIOS: dict[str, type] = {"BaseApi": BaseApi, "MessageApi": MessageApi, "ReminderApi": ReminderApi,
                              "FoodPlatform": FoodPlatform, "Travel": Travel}


# ---- replay -----------------------------------------------------------------------------------
class Sandbox:
    def __init__(self, involved: list[str], initial_config: dict[str, Any]) -> None:
        self.instances: dict[str, Any] = {}
        for name in involved:
            cls = SCENARIOS.get(name)
            if cls is None:
                continue
            inst = cls()
            inst._load(copy.deepcopy(initial_config.get(name, {})))
            inst._load(copy.deepcopy(initial_config.get("BaseApi", {})))
            self.instances[name] = inst

    def call(self, name: str, args: dict[str, Any]) -> list[Any]:
        if name.startswith("_") or "." in name:
            raise SandboxError(f"no such function {name}")
        targets = [i for i in self.instances.values() if callable(getattr(type(i), name, None))]
        if not targets:
            raise SandboxError(f"no such function {name}")
        out = []
        for inst in targets:
            try:
                out.append(getattr(inst, name)(**copy.deepcopy(args)))
            except SandboxError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure of a call stops the turn
                raise SandboxError(f"{name}: {type(exc).__name__}") from None
        return out

    def state(self) -> list[dict[str, Any]]:
        out = []
        for name, inst in self.instances.items():
            snap = {attr: getattr(inst, attr) for attr in inst.EXPORT}
            out.append({name: json.loads(json.dumps(snap, default=str))})
        return out


def parse_turns(prediction: str) -> list[str]:
    """The agent prediction: a JSON list of turn strings, or one turn per non-empty line."""
    text = prediction if isinstance(prediction, str) else ""
    stripped = text.strip()
    if stripped.startswith("[\"") or stripped.startswith("[ \"") or stripped == "[]" or stripped.startswith("[\n"):
        try:
            obj = json.loads(stripped)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, list) and all(isinstance(t, str) for t in obj):
            return obj
    return [line for line in text.splitlines() if line.strip()]


def _is_state(obj: Any) -> bool:
    """A reported end state: a list of one-key objects ``{ClassName: {attribute: value}}``."""
    return isinstance(obj, list) and all(isinstance(c, dict) and len(c) == 1 for c in obj)


def parse_prediction(prediction: str) -> tuple[list[str], list[dict[str, Any]] | None]:
    """An agent prediction: ``(turns, reported end state or None)``.

    Accepted forms: the official inference record's fields as one JSON object
    ``{"result": [{Class: {...}}, ...], "process": ["[call(...)]", ...]}`` (state and call
    strings, either may be absent); a JSON list of class states (the official ``result``
    field alone); otherwise the turns read by :func:`parse_turns`.
    """
    text = prediction.strip() if isinstance(prediction, str) else ""
    if text.startswith("{") or text.startswith("[{") or text.startswith("[ {") or text.startswith("[\n"):
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict) and ("result" in obj or "process" in obj):
            state = obj.get("result")
            process = obj.get("process")
            turns = [t for t in process if isinstance(t, str)] if isinstance(process, list) else []
            return turns, (state if _is_state(state) else None)
        if isinstance(obj, list) and obj and _is_state(obj):
            return [], obj
    return parse_turns(prediction), None


def decode_turn(turn: str, mode: str) -> list[tuple[str, dict[str, Any]]]:
    calls = official_agent_turn(turn) if mode == "official" else decode_strict(turn)
    out = []
    for c in calls:
        name = next(iter(c))
        out.append((name, c[name]))
    return out


def replay(case_input: dict[str, Any], turns: list[str], mode: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Run every decodable turn in a fresh sandbox; returns (end state, notes on failed turns)."""
    involved = [c for c in case_input.get("involved_classes", []) if isinstance(c, str)]
    config = case_input.get("initial_config") or {}
    box = Sandbox(involved, config if isinstance(config, dict) else {})
    notes: list[str] = []
    for n, turn in enumerate(turns[:200]):
        check_time()
        try:
            calls = decode_turn(turn, mode)
        except DecodeError as exc:
            notes.append(f"turn {n}: not decodable ({exc})")
            continue
        for name, args in calls:
            try:
                box.call(name, args)
            except SandboxError as exc:
                notes.append(f"turn {n}: {exc}")
                break
    return box.state(), notes


# ---- comparisons ------------------------------------------------------------------------------
def compare_official(model: list[dict[str, Any]], gold: Any) -> tuple[bool, str]:
    golds = gold if isinstance(gold, list) else [gold]
    if len(golds) != len(model):
        return False, "wrong number of classes"
    errors: list[str] = []
    for g in golds:
        if not isinstance(g, dict) or not g:
            continue
        match = next((m for m in model if set(m) == set(g)), None)
        if match is None:
            continue  # the official checker silently skips a class it cannot pair by name
        cls = next(iter(g))
        gattrs, mattrs = g[cls], match[cls]
        if not isinstance(gattrs, dict):
            continue
        if not isinstance(mattrs, dict):  # a reported state that is no object (the official checker raises)
            errors.append(f"{cls} is not an object of attributes")
            continue
        for attr, mval in mattrs.items():
            if attr not in gattrs:
                errors.append(f"{cls}.{attr} missing in the answer")
                continue
            gval = gattrs[attr]
            if isinstance(gval, dict):
                for k, v in gval.items():
                    if not isinstance(mval, dict) or k not in mval or v != mval[k]:
                        errors.append(f"{cls}.{attr}.{k} differs")
            elif gval != mval:
                errors.append(f"{cls}.{attr} differs")
    return (not errors), "; ".join(errors)[:300]


def resolve_gold_classes(model: list[dict[str, Any]], gold: Any) -> tuple[dict[str, Any], list[str]]:
    """Pair gold class states with sandbox classes: exact name, then case-insensitive, then same attributes."""
    golds = [g for g in (gold if isinstance(gold, list) else [gold]) if isinstance(g, dict) and len(g) == 1]
    names = [next(iter(m)) for m in model]
    exports = {next(iter(m)): set(next(iter(m.values()))) for m in model}
    paired: dict[str, Any] = {}
    problems: list[str] = []
    for g in golds:
        gname = next(iter(g))
        target = gname if gname in names and gname not in paired else None
        if target is None:
            target = next((n for n in names if n.lower() == gname.lower() and n not in paired), None)
        if target is None and isinstance(g[gname], dict):
            cands = [n for n in names if n not in paired and exports[n] == set(g[gname])]
            target = cands[0] if len(cands) == 1 else None
        if target is None:
            problems.append(f"gold class {gname} matches no involved class")
            continue
        if target != gname:
            problems.append(f"gold class {gname} read as {target}")
        paired[target] = g[gname]
    return paired, problems


def compare_strict(model: list[dict[str, Any]], gold: Any) -> tuple[bool, str]:
    paired, problems = resolve_gold_classes(model, gold)
    hard = [p for p in problems if "matches no" in p]
    if hard:
        return False, "; ".join(hard)
    errors = []
    for m in model:
        cls = next(iter(m))
        if cls not in paired:
            errors.append(f"{cls}: no gold state")
            continue
        g, s = paired[cls], m[cls]
        for attr in sorted(set(g) | set(s)):
            if g.get(attr, object()) != s.get(attr, object()):
                errors.append(f"{cls}.{attr} differs")
    return (not errors), "; ".join(errors)[:300]


def _norm_call_string(s: str, mode: str) -> Any:
    if mode == "official":
        return s.strip()
    try:
        return ("calls", json.dumps(decode_turn(s, "strict"), sort_keys=True, default=str))
    except DecodeError:
        return ("text", " ".join(s.split()))


def process_score(turns: list[str], milestones: Any, mode: str) -> float:
    """Share of gold milestones found in order in the turns (best over alternative lists)."""
    if not isinstance(milestones, list) or not milestones:
        return 1.0
    alts = milestones if isinstance(milestones[0], list) else [milestones]
    got = [_norm_call_string(t, mode) for t in turns]
    best = 0.0
    for alt in alts:
        check_time()
        if not isinstance(alt, list) or not alt:
            return 1.0
        pos, hits = 0, 0
        for stone in alt:
            want = _norm_call_string(str(stone), mode)
            while pos < len(got):
                pos += 1
                if got[pos - 1] == want:
                    hits += 1
                    break
        score = hits / len(alt)
        best = max(best, round(score, 3) if mode == "official" else score)
    return best
