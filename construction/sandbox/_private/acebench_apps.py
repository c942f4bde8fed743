"""ACEBench-flavoured phone domains: ``acebench_phone`` (ACEBench's ``BaseApi``), ``acebench_message``
(``MessageApi``), ``acebench_reminder`` (``ReminderApi``) and ``acebench_food`` (``FoodPlatform``).

They keep ACEBench's semantics rather than the sandbox's own (see ``docs/construction/sandbox.md``):
its method names, arguments and return values; a refused request is an ordinary result
``{"status": False, "message": ...}``, not an error; arguments are passed as given (``loose``
domains: no schema check, a Python error of the tool is a ``tool_failed`` error, no rollback).
Their default states are the apps' data that ACEBench's English gold end states imply.

The Wi-Fi and device log-in are ACEBench's per-class ``wifi`` / ``logged_in`` attributes; every
class starts from the same values and the two phone tools set them on every class at once, so
one ``acebench_phone`` domain holds them for all, and the message, reminder and food domains read
them there (they need the phone in the same config).

>>> from benchsmith.construction.sandbox import Sandbox
>>> sb = Sandbox({"acebench_phone": {"wifi": False}, "acebench_message": {}})
>>> sb.call("send_message", {"sender_name": "Eve", "receiver_name": "Frank", "message": "hi"})
{'status': False, 'message': 'Wi-Fi is off'}
>>> sb.call("turn_on_wifi", {})
{'status': True, 'message': 'Wi-Fi is on'}
>>> sb.call("delete_message", {"message_id": 1})["status"]
True
>>> sb.call("send_message", {"sender_name": "Eve", "receiver_name": "Frank", "message": "hi"})
{'status': True, 'message': 'sent to Frank'}
>>> sb.state()["acebench_message"]["inbox"]["7"]
{'sender_id': 'USR100', 'receiver_id': 'USR101', 'message': 'hi'}
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field

from benchsmith.schemas import StrictModel, ToolError

from .engine import Domain, domain
from .tooling import tool

_PEOPLE = ("Eve", "Frank", "Grace", "Helen", "Isaac", "Jack")


class AceBenchDomain(Domain):
    """Base of the ACEBench-flavoured domains: ACEBench's calling convention (``loose``), the
    ACEBench class it stands for and the state keys that class exports."""

    loose = True
    acebench_class: ClassVar[str] = ""
    exported: ClassVar[tuple[str, ...]] = ()

    def snapshot(self) -> dict[str, Any]:
        """Every state field as JSON; values JSON lacks are written as text (never raises)."""
        out: dict[str, Any] = {}
        for name in type(self.state).model_fields:
            value = getattr(self.state, name)
            try:
                out[name] = json.loads(json.dumps(value, default=str))
            except (TypeError, ValueError, RecursionError):
                out[name] = repr(value)[:2000]
        return out

    def exported_state(self) -> dict[str, Any]:
        """The exported keys as ACEBench writes its end state (JSON round trip: integer keys
        become strings, other values JSON lacks become text)."""
        snap = {name: getattr(self.state, name) for name in self.exported}
        return json.loads(json.dumps(snap, default=str))

    def phone(self) -> PhoneState:
        """The shared Wi-Fi / log-in state (the ``acebench_phone`` domain)."""
        return self.sandbox.domains["acebench_phone"].state  # type: ignore[return-value]


# ---- phone (BaseApi) -------------------------------------------------------------------------
class PhoneState(StrictModel):
    """ACEBench's ``wifi`` and ``logged_in`` (kept as given: ACEBench tests their truth value)."""

    wifi: Any = False
    logged_in: Any = True


@domain("acebench_phone")
class AceBenchPhone(AceBenchDomain):
    """ACEBench's ``BaseApi``: the phone's Wi-Fi and device log-in."""

    State = PhoneState
    state: PhoneState
    acebench_class = "BaseApi"
    exported = ("wifi", "logged_in")

    @tool
    def turn_on_wifi(self) -> dict[str, Any]:
        """Turn on the phone's Wi-Fi so that online apps work."""
        self.state.wifi = True
        return {"status": True, "message": "Wi-Fi is on"}

    @tool
    def login_device(self) -> dict[str, Any]:
        """Log in to the phone so that its apps can be used."""
        self.state.logged_in = True
        return {"status": True, "message": "device logged in"}


# ---- messages (MessageApi) -------------------------------------------------------------------
def _default_inbox() -> dict[int, dict[str, Any]]:
    rows = [
        (
            "USR100",
            "USR101",
            "Hey Frank, don't forget about our meeting on 2024-06-11 at 4 PM in Conference Room 1.",
            "2024-06-09",
        ),
        (
            "USR101",
            "USR102",
            'Can you help me order a "Margherita Pizza" delivery? The merchant is Domino\'s.',
            "2024-03-09",
        ),
        (
            "USR102",
            "USR103",
            (
                "Please check the milk tea delivery options available from Heytea and purchase a "
                "cheaper milk tea for me. After making the purchase, remember to reply to me with "
                '"Already bought."'
            ),
            "2023-12-05",
        ),
        ("USR103", "USR102", "No problem Helen, I can assist you.", "2024-09-09"),
        ("USR104", "USR105", "Isaac, are you available for a call?", "2024-06-06"),
        ("USR105", "USR104", "Yes Jack, let's do it in 30 minutes.", "2024-01-15"),
    ]
    return {i: {"sender_id": s, "receiver_id": r, "message": m, "time": t} for i, (s, r, m, t) in enumerate(rows, 1)}


class MessageState(StrictModel):
    """User ids by name, the inbox (``{message id: {sender_id, receiver_id, message, time?}}``), the
    last message id given out and the inbox capacity."""

    user_ids: dict[str, str] = Field(default_factory=lambda: {n: f"USR{100 + i}" for i, n in enumerate(_PEOPLE)})
    inbox: dict[int, dict[str, Any]] = Field(default_factory=_default_inbox)
    counter: int = 6
    capacity: int = 6


@domain("acebench_message")
class AceBenchMessage(AceBenchDomain):
    """ACEBench's ``MessageApi``: text messages between named users."""

    State = MessageState
    state: MessageState
    acebench_class = "MessageApi"
    exported = ("inbox",)
    requires = ("acebench_phone",)

    @tool
    def send_message(self, sender_name: str, receiver_name: str, message: str) -> dict[str, Any]:
        """Send a text message from one user to another (needs Wi-Fi and a free inbox slot).

        Args:
            sender_name: The sender's name.
            receiver_name: The receiver's name.
            message: The message text.
        """
        st, phone = self.state, self.phone()
        if not phone.logged_in:
            return {"status": False, "message": "device not logged in"}
        if not phone.wifi:
            return {"status": False, "message": "Wi-Fi is off"}
        if len(st.inbox) >= st.capacity:
            return {"status": False, "message": "inbox full: ask the user which message to delete"}
        if sender_name not in st.user_ids or receiver_name not in st.user_ids:
            return {"status": False, "message": "unknown sender or receiver"}
        st.counter += 1
        st.inbox[st.counter] = {
            "sender_id": st.user_ids[sender_name],
            "receiver_id": st.user_ids[receiver_name],
            "message": message,
        }
        return {"status": True, "message": f"sent to {receiver_name}"}

    @tool
    def delete_message(self, message_id: int) -> dict[str, Any]:
        """Delete one message from the inbox by its id.

        Args:
            message_id: The id of the message to delete.
        """
        if not self.phone().logged_in:
            return {"status": False, "message": "device not logged in"}
        if message_id not in self.state.inbox:
            return {"status": False, "message": "no such message id"}
        del self.state.inbox[message_id]
        return {"status": True, "message": f"message {message_id} deleted"}

    @tool
    def view_messages_between_users(self, sender_name: str, receiver_name: str) -> dict[str, Any]:
        """Show the messages one user sent to another.

        Args:
            sender_name: The sender's name.
            receiver_name: The receiver's name.
        """
        st = self.state
        if not self.phone().logged_in:
            return {"status": False, "message": "device not logged in"}
        if sender_name not in st.user_ids or receiver_name not in st.user_ids:
            return {"status": False, "message": "unknown user"}
        s, r = st.user_ids[sender_name], st.user_ids[receiver_name]
        found = [
            {"id": i, "sender": sender_name, "receiver": receiver_name, "message": m["message"]}
            for i, m in st.inbox.items()
            if m["sender_id"] == s and m["receiver_id"] == r
        ]
        return {"status": True, "messages": found} if found else {"status": False, "message": "no messages"}

    @tool
    def search_messages(self, user_name: str, keyword: str) -> dict[str, Any]:
        """Find a user's sent or received messages that contain a keyword (ignoring case).

        Args:
            user_name: The user whose messages are searched.
            keyword: The word or phrase to look for.
        """
        st = self.state
        if user_name not in st.user_ids:
            return {"status": False, "message": "unknown user"}
        uid = st.user_ids[user_name]
        found = [
            {"id": i, **m}
            for i, m in st.inbox.items()
            if uid in (m["sender_id"], m["receiver_id"]) and str(keyword).lower() in m["message"].lower()
        ]
        return {"status": True, "messages": found} if found else {"status": False, "message": "nothing found"}

    @tool
    def get_all_message_times_with_ids(self) -> dict[str, Any]:
        """List the time of every message in the inbox by message id."""
        if not self.phone().logged_in:
            return {"status": False, "message": "device not logged in"}
        return {i: m["time"] for i, m in self.state.inbox.items()}

    def _extreme(self, latest: bool) -> dict[str, Any]:
        if not self.phone().logged_in:
            return {"status": False, "message": "device not logged in"}
        if not self.state.inbox:
            return {"status": False, "message": "no messages"}
        best_id, best = None, None
        for i, m in self.state.inbox.items():
            if "time" not in m:
                raise ToolError(f"message {i} has no time", code="missing_time")
            t = datetime.strptime(m["time"], "%Y-%m-%d")
            if best is None or (t > best if latest else t < best):
                best_id, best = i, t
        return {"status": True, "message_id": best_id}

    @tool
    def get_latest_message_id(self) -> dict[str, Any]:
        """Give the id of the most recent message in the inbox (by its date)."""
        return self._extreme(True)

    @tool
    def get_earliest_message_id(self) -> dict[str, Any]:
        """Give the id of the oldest message in the inbox (by its date)."""
        return self._extreme(False)


# ---- reminders (ReminderApi) -----------------------------------------------------------------
def _default_reminders() -> dict[int, dict[str, Any]]:
    return {
        1: {
            "reminder_id": 1001,
            "title": "Doctor's Appointment",
            "description": "Visit Dr. Smith for a checkup.",
            "time": "2024-07-15 09:30",
            "notified": False,
        },
        2: {
            "reminder_id": 1002,
            "title": "Team Meeting",
            "description": "Monthly project review with the team.",
            "time": "2024-07-17 11:00",
            "notified": False,
        },
        3: {
            "reminder_id": 1003,
            "title": "To-do list",
            "description": 'First, help Frank place a food delivery order at "Hema Fresh," ordering two "Fresh Gift '
            'Packs." Then, send a message to Frank saying, "The price of the purchased goods is () '
            'yuan." Replace the parentheses with the actual amount, keeping one decimal place.',
            "time": "2024-07-16 11:00",
            "notified": False,
        },
    }


class ReminderState(StrictModel):
    """The reminder list (``{key: {reminder_id, title, description, time, notified}}``), the last key
    given out and the list's capacity."""

    reminder_list: dict[int, dict[str, Any]] = Field(default_factory=_default_reminders)
    counter: int = 3
    capacity: int = 6


@domain("acebench_reminder")
class AceBenchReminder(AceBenchDomain):
    """ACEBench's ``ReminderApi``: titled reminders with a description and a time."""

    State = ReminderState
    state: ReminderState
    acebench_class = "ReminderApi"
    exported = ("reminder_list",)
    requires = ("acebench_phone",)

    @tool
    def view_reminder_by_title(self, title: str) -> dict[str, Any]:
        """Show the first reminder with exactly this title.

        Args:
            title: The reminder's title.
        """
        if not self.phone().logged_in:
            return {"status": False, "message": "device not logged in"}
        for r in self.state.reminder_list.values():
            if r["title"] == title:
                return {"status": True, "reminder": r}
        return {"status": False, "message": f"no reminder titled {title!r}"}

    @tool
    def add_reminder(self, title: str, description: str, time: str) -> dict[str, Any]:
        """Add a reminder (while the list has room).

        Args:
            title: The reminder's title.
            description: What the reminder is about.
            time: When it goes off, as YYYY-MM-DD HH:MM.
        """
        st = self.state
        if not self.phone().logged_in:
            return {"status": False, "message": "device not logged in"}
        if len(st.reminder_list) >= st.capacity:
            return {"status": False, "message": "reminder list full"}
        st.counter += 1
        st.reminder_list[st.counter] = {
            "reminder_id": st.counter,
            "title": title,
            "description": description,
            "time": time,
            "notified": False,
        }
        return {"status": True, "message": f"reminder {title!r} added"}

    @tool
    def delete_reminder(self, reminder_id: int) -> dict[str, Any]:
        """Delete a reminder by its key in the reminder list.

        Args:
            reminder_id: The reminder's key in the list.
        """
        if not self.phone().logged_in:
            return {"status": False, "message": "device not logged in"}
        if reminder_id not in self.state.reminder_list:
            return {"status": False, "message": "no such reminder"}
        del self.state.reminder_list[reminder_id]
        return {"status": True, "message": f"reminder {reminder_id} deleted"}

    @tool
    def view_all_reminders(self) -> dict[str, Any]:
        """List every reminder's title, description, time and whether it was notified."""
        if not self.state.reminder_list:
            return {"status": False, "message": "no reminders"}
        return {
            "status": True,
            "reminders": [
                {k: r[k] for k in ("title", "description", "time", "notified")}
                for r in self.state.reminder_list.values()
            ],
        }

    @tool
    def search_reminders(self, keyword: str) -> dict[str, Any]:
        """Find reminders whose title or description contains a keyword (ignoring case).

        Args:
            keyword: The word or phrase to look for.
        """
        kw = str(keyword).lower()
        found = [
            r for r in self.state.reminder_list.values() if kw in r["title"].lower() or kw in r["description"].lower()
        ]
        return {"status": True, "reminders": found} if found else {"status": False, "message": "nothing found"}


# ---- food delivery (FoodPlatform) ------------------------------------------------------------
def _default_food_users() -> dict[str, dict[str, Any]]:
    balances = (500.0, 300.0, 150.0, 800.0, 400.0, 120.0)
    passwords = ("password123", "password456", "password789", "password321", "password654", "password654")
    return {
        n: {"user_id": f"U{100 + i}", "password": passwords[i], "balance": balances[i]} for i, n in enumerate(_PEOPLE)
    }


def _default_merchants() -> dict[str, dict[str, float]]:
    return {
        "Domino's": {"Margherita Pizza": 68.0, "Super Supreme Pizza": 88.0},
        "Rice Village Bibimbap": {"Stone Pot Bibimbap": 35.0, "Korean Beef Bibimbap": 45.0},
        "Haidilao": {"Beef Rolls": 68.0, "Seafood Platter": 88.0},
        "Heytea": {"Cheese Milk Tea": 25.0, "Four Seasons Spring Milk Tea": 22.0},
        "Hema Fresh": {"Organic Vegetable Pack": 15.0, "Fresh Gift Pack": 99.0},
        "Jiutian BBQ": {"Korean Grilled Beef": 128.0, "Grilled Pork Belly": 78.0},
    }


class FoodState(StrictModel):
    """Users by name (``user_id``, ``password``, ``balance``), merchants' menus
    (``{merchant: {product: price}}``), the users logged in to the platform and the orders."""

    users: dict[str, dict[str, Any]] = Field(default_factory=_default_food_users)
    merchants: dict[str, dict[str, float]] = Field(default_factory=_default_merchants)
    logged_in_users: list[Any] = Field(default_factory=list)
    orders: list[dict[str, Any]] = Field(default_factory=list)


@domain("acebench_food")
class AceBenchFood(AceBenchDomain):
    """ACEBench's ``FoodPlatform``: log in, browse merchants' products and order delivery."""

    State = FoodState
    state: FoodState
    acebench_class = "FoodPlatform"
    exported = ("users", "logged_in_users", "orders")
    requires = ("acebench_phone",)

    @tool
    def login_food_platform(self, username: str, password: str) -> dict[str, Any]:
        """Log a user in to the food delivery platform (needs Wi-Fi).

        Args:
            username: The user's name.
            password: The user's password.
        """
        st = self.state
        if not self.phone().wifi:
            return {"status": False, "message": "Wi-Fi is off"}
        if username not in st.users:
            return {"status": False, "message": "unknown user"}
        if st.users[username]["password"] != password:
            return {"status": False, "message": "wrong password"}
        if username in st.logged_in_users:
            return {"status": False, "message": "already logged in"}
        st.logged_in_users.append(username)
        return {"status": True, "message": f"{username} logged in"}

    @tool
    def view_logged_in_users(self) -> dict[str, Any]:
        """List the users logged in to the food delivery platform."""
        return {"status": bool(self.state.logged_in_users), "logged_in_users": self.state.logged_in_users}

    @tool
    def check_balance(self, user_name: str) -> float:
        """Give a user's balance on the food delivery platform (0.0 for an unknown user).

        Args:
            user_name: The user's name.
        """
        return self.state.users[user_name]["balance"] if user_name in self.state.users else 0.0

    @tool
    def add_food_delivery_order(self, username: str, merchant_name: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        """Order products from a merchant for a logged-in user, paid from their balance.

        Args:
            username: The ordering user's name (logged in to the platform).
            merchant_name: The merchant's name.
            items: The products to order, each an object with ``product`` and ``quantity`` (default 1).
        """
        st = self.state
        if username not in st.logged_in_users:
            return {"status": False, "message": "user not logged in to the platform"}
        if merchant_name not in st.merchants:
            return {"status": False, "message": "unknown merchant"}
        total, lines = 0.0, []
        for item in items:
            if not isinstance(item, dict):
                raise ToolError("order item is not an object", code="bad_item")
            product, qty = item.get("product"), item.get("quantity", 1)
            if not isinstance(qty, int) or qty <= 0:
                return {"status": False, "message": f"invalid quantity {qty}"}
            price = next((p for name, p in st.merchants[merchant_name].items() if name == product), None)
            if price is None:
                return {"status": False, "message": f"{product} is not on the menu"}
            total += price * qty
            lines.append({"product": product, "quantity": qty, "price_per_unit": price})
        if total > st.users[username]["balance"]:
            return {"status": False, "message": "insufficient balance"}
        st.users[username]["balance"] -= total
        st.orders.append({"user_name": username, "merchant_name": merchant_name, "items": lines, "total_price": total})
        return {"status": True, "message": f"ordered, total {total}"}

    @tool
    def get_products(self, merchant_name: str) -> Any:
        """List a merchant's products with their prices.

        Args:
            merchant_name: The merchant's name.
        """
        if merchant_name not in self.state.merchants:
            return {"status": False, "message": "unknown merchant"}
        return [{"product": n, "price": p} for n, p in self.state.merchants[merchant_name].items()]

    @tool
    def view_orders(self, user_name: str) -> dict[str, Any]:
        """List a user's orders.

        Args:
            user_name: The user's name.
        """
        mine = [o for o in self.state.orders if o["user_name"] == user_name]
        return {"status": True, "orders": mine} if mine else {"status": False, "message": "no orders"}

    @tool
    def search_orders(self, keyword: str) -> dict[str, Any]:
        """Find orders whose merchant or a product contains a keyword (ignoring case).

        Args:
            keyword: The word or phrase to look for.
        """
        kw = str(keyword).lower()
        found = [
            o
            for o in self.state.orders
            if kw in o["merchant_name"].lower() or any(kw in i["product"].lower() for i in o["items"])
        ]
        return {"status": True, "orders": found} if found else {"status": False, "message": "nothing found"}
