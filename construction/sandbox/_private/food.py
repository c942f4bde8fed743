"""The ``food`` domain: a food-delivery app with accounts, restaurants, menus and orders.

Ordering needs a logged-in account (``not_logged_in``), a known (``unknown_restaurant``) and open
(``restaurant_closed``) restaurant, dishes from its menu (``unknown_dish``), quantities from 1 to
``max_quantity`` (``bad_quantity``) and enough balance (``insufficient_balance``). Money is kept
in currency units rounded to cents; order ids grow from ``next_order_id``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from benchsmith.schemas import StrictModel, ToolError

from .engine import Domain, domain
from .tooling import tool


def money(x: float) -> float:
    """``x`` rounded to cents."""
    return round(x + 0.0, 2)


class Account(StrictModel):
    """A customer account of the app."""

    password: str = Field(min_length=1)
    balance: float = Field(ge=0)


class Restaurant(StrictModel):
    """A restaurant and its menu (dish name -> unit price)."""

    cuisine: str = ""
    open: bool = True
    menu: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _prices_positive(self) -> Restaurant:
        bad = [d for d, p in self.menu.items() if p <= 0]
        if bad:
            raise ValueError(f"menu prices must be positive: {bad}")
        return self


class OrderLine(StrictModel):
    """One line of a placed order."""

    dish: str
    quantity: int = Field(ge=1)
    unit_price: float = Field(gt=0)


class Order(StrictModel):
    """A placed (or cancelled) order."""

    id: int = Field(ge=1)
    username: str
    restaurant: str
    lines: list[OrderLine] = Field(min_length=1)
    total: float = Field(ge=0)
    status: Literal["placed", "cancelled"] = "placed"


class FoodState(StrictModel):
    """Accounts by username, restaurants by name, the logged-in user, orders and limits."""

    accounts: dict[str, Account] = Field(default_factory=dict)
    restaurants: dict[str, Restaurant] = Field(default_factory=dict)
    session: str | None = None
    orders: list[Order] = Field(default_factory=list)
    max_quantity: int = Field(default=20, ge=1)
    next_order_id: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _consistent(self) -> FoodState:
        if self.session is not None and self.session not in self.accounts:
            raise ValueError(f"session user {self.session!r} has no account")
        ids = [o.id for o in self.orders]
        if len(set(ids)) != len(ids):
            raise ValueError("order ids must be unique")
        top = max(ids, default=0)
        if self.next_order_id == 0:
            self.next_order_id = top + 1
        elif self.next_order_id <= top:
            raise ValueError(f"next_order_id {self.next_order_id} must be greater than every order id (max {top})")
        return self


class OrderItem(StrictModel):
    """One dish of an order request (a tool argument)."""

    dish: str = Field(description="The dish name, exactly as on the restaurant's menu.")
    quantity: int = Field(default=1, description="How many portions (at least 1).")


@domain("food")
class Food(Domain):
    """Food delivery: log in, browse menus, order and cancel."""

    State = FoodState
    state: FoodState
    needs_network = True

    def _user(self, tool_name: str) -> str:
        if self.state.session is None:
            raise ToolError(
                f"{tool_name}: nobody is logged in to the food app; log in first (food_login)", code="not_logged_in"
            )
        return self.state.session

    def _restaurant(self, tool_name: str, name: str) -> Restaurant:
        rest = self.state.restaurants.get(name)
        if rest is None:
            known = ", ".join(self.state.restaurants) or "none"
            raise ToolError(
                f"{tool_name}: no restaurant named {name!r} (restaurants: {known})", code="unknown_restaurant"
            )
        return rest

    @tool
    def food_login(self, username: str, password: str) -> dict[str, Any]:
        """Log in to the food delivery app (replaces any user logged in before).

        Args:
            username: The account's username.
            password: The account's password.
        """
        account = self.state.accounts.get(username)
        if account is None:
            raise ToolError(f"food_login: no account named {username!r}", code="unknown_user")
        if password != account.password:
            raise ToolError(f"food_login: wrong password for {username!r}", code="wrong_password")
        self.state.session = username
        return {"status": "logged_in", "username": username}

    @tool
    def food_logout(self) -> dict[str, Any]:
        """Log the current user out of the food delivery app."""
        user = self._user("food_logout")
        self.state.session = None
        return {"status": "logged_out", "username": user}

    @tool
    def check_balance(self) -> dict[str, Any]:
        """Show the logged-in user's account balance in the food delivery app."""
        user = self._user("check_balance")
        return {"username": user, "balance": self.state.accounts[user].balance}

    @tool
    def list_restaurants(self, cuisine: str | None = None) -> dict[str, Any]:
        """List the restaurants of the food delivery app, optionally only one cuisine.

        Args:
            cuisine: Only restaurants of this cuisine (ignoring case); all if omitted.
        """
        rows = [
            {"name": n, "cuisine": r.cuisine, "open": r.open}
            for n, r in self.state.restaurants.items()
            if cuisine is None or r.cuisine.casefold() == cuisine.casefold()
        ]
        return {"restaurants": rows}

    @tool
    def get_menu(self, restaurant: str) -> dict[str, Any]:
        """Show a restaurant's dishes and their prices.

        Args:
            restaurant: The restaurant's name, exactly as listed.
        """
        rest = self._restaurant("get_menu", restaurant)
        return {
            "restaurant": restaurant,
            "open": rest.open,
            "dishes": [{"dish": d, "price": p} for d, p in rest.menu.items()],
        }

    @tool
    def place_order(self, restaurant: str, items: list[OrderItem]) -> dict[str, Any]:
        """Order dishes from a restaurant for the logged-in user, paid from their balance.

        Args:
            restaurant: The restaurant's name, exactly as listed.
            items: The dishes to order, each with a quantity.
        """
        user = self._user("place_order")
        rest = self._restaurant("place_order", restaurant)
        if not rest.open:
            raise ToolError(f"place_order: {restaurant} is closed", code="restaurant_closed")
        if not items:
            raise ToolError("place_order: the order has no items", code="empty_order")
        lines = []
        for item in items:
            if item.dish not in rest.menu:
                raise ToolError(
                    f"place_order: {restaurant} has no dish {item.dish!r} (menu: {', '.join(rest.menu)})",
                    code="unknown_dish",
                )
            if not 1 <= item.quantity <= self.state.max_quantity:
                raise ToolError(
                    f"place_order: quantity {item.quantity} of {item.dish!r} must be 1 to {self.state.max_quantity}",
                    code="bad_quantity",
                )
            lines.append(OrderLine(dish=item.dish, quantity=item.quantity, unit_price=rest.menu[item.dish]))
        total = money(sum(line.quantity * line.unit_price for line in lines))
        account = self.state.accounts[user]
        if total > account.balance:
            raise ToolError(
                f"place_order: the order costs {total}, but {user}'s balance is only {account.balance}",
                code="insufficient_balance",
            )
        account.balance = money(account.balance - total)
        order = Order(id=self.state.next_order_id, username=user, restaurant=restaurant, lines=lines, total=total)
        self.state.orders.append(order)
        self.state.next_order_id += 1
        return {"status": "placed", "order_id": order.id, "total": total, "balance": account.balance}

    @tool
    def list_orders(self) -> dict[str, Any]:
        """List the logged-in user's orders, oldest first."""
        user = self._user("list_orders")
        return {"orders": [o.model_dump(mode="json") for o in self.state.orders if o.username == user]}

    @tool
    def cancel_order(self, order_id: int) -> dict[str, Any]:
        """Cancel one of the logged-in user's orders and refund its total to their balance.

        Args:
            order_id: The id of the order (see list_orders).
        """
        user = self._user("cancel_order")
        order = next((o for o in self.state.orders if o.id == order_id), None)
        if order is None:
            raise ToolError(f"cancel_order: no order has id {order_id}", code="unknown_order")
        if order.username != user:
            raise ToolError(f"cancel_order: order {order_id} belongs to another user", code="not_your_order")
        if order.status == "cancelled":
            raise ToolError(f"cancel_order: order {order_id} is already cancelled", code="already_cancelled")
        order.status = "cancelled"
        account = self.state.accounts[user]
        account.balance = money(account.balance + order.total)
        return {"status": "cancelled", "order_id": order_id, "refund": order.total, "balance": account.balance}
