"""The ``messaging`` domain: the phone owner's text messages with their contacts.

Preconditions: the recipient must be a contact (``unknown_contact``), a text must not be blank
(``empty_message``) nor longer than ``max_length`` (``message_too_long``), and the phone stores at
most ``capacity`` messages (``storage_full``: delete one first). Message ids grow from ``next_id``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from benchsmith.schemas import StrictModel, ToolError

from .engine import Domain, domain
from .tooling import tool


class Message(StrictModel):
    """One stored text message."""

    id: int = Field(ge=1)
    sender: str = Field(min_length=1)
    recipient: str = Field(min_length=1)
    text: str


class MessagingState(StrictModel):
    """The owner, their contacts, the stored messages (oldest first) and the storage limits."""

    owner: str = Field(min_length=1)
    contacts: list[str] = Field(default_factory=list)
    messages: list[Message] = Field(default_factory=list)
    capacity: int = Field(default=20, ge=1)
    max_length: int = Field(default=160, ge=1)
    next_id: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _consistent(self) -> MessagingState:
        if len(set(self.contacts)) != len(self.contacts):
            raise ValueError("contacts must be unique")
        if self.owner in self.contacts:
            raise ValueError("the owner cannot be one of their own contacts")
        ids = [m.id for m in self.messages]
        if len(set(ids)) != len(ids):
            raise ValueError("message ids must be unique")
        if len(self.messages) > self.capacity:
            raise ValueError(f"{len(self.messages)} messages exceed the capacity {self.capacity}")
        top = max(ids, default=0)
        if self.next_id == 0:
            self.next_id = top + 1
        elif self.next_id <= top:
            raise ValueError(f"next_id {self.next_id} must be greater than every message id (max {top})")
        return self


@domain("messaging")
class Messaging(Domain):
    """Text messages of the phone owner."""

    State = MessagingState
    state: MessagingState
    needs_network = True

    def _contact(self, name: str) -> str:
        if name not in self.state.contacts:
            known = ", ".join(self.state.contacts) or "none"
            raise ToolError(
                f"{name!r} is not a contact (contacts: {known}); add them first (add_contact)", code="unknown_contact"
            )
        return name

    def _view(self, m: Message) -> dict[str, Any]:
        direction = "sent" if m.sender == self.state.owner else "received"
        return {
            "message_id": m.id,
            "sender": m.sender,
            "recipient": m.recipient,
            "text": m.text,
            "direction": direction,
        }

    @tool
    def send_message(self, recipient: str, text: str) -> dict[str, Any]:
        """Send a text message from the phone owner to one of their contacts.

        Args:
            recipient: The contact's name, exactly as in the contact list.
            text: The message text (not blank, at most the phone's maximum length).
        """
        self._contact(recipient)
        if not text.strip():
            raise ToolError("send_message: the text is blank", code="empty_message")
        if len(text) > self.state.max_length:
            raise ToolError(
                f"send_message: the text has {len(text)} characters, the limit is {self.state.max_length}",
                code="message_too_long",
            )
        if len(self.state.messages) >= self.state.capacity:
            raise ToolError(
                f"send_message: message storage is full ({self.state.capacity} messages); delete a message first",
                code="storage_full",
            )
        msg = Message(id=self.state.next_id, sender=self.state.owner, recipient=recipient, text=text)
        self.state.messages.append(msg)
        self.state.next_id += 1
        return {"status": "sent", "message_id": msg.id, "recipient": recipient}

    @tool
    def list_messages(self, contact: str | None = None) -> dict[str, Any]:
        """List stored messages, oldest first, optionally only those exchanged with one contact.

        Args:
            contact: Only messages sent to or received from this contact; all messages if omitted.
        """
        msgs = self.state.messages
        if contact is not None:
            self._contact(contact)
            msgs = [m for m in msgs if contact in (m.sender, m.recipient)]
        return {
            "messages": [self._view(m) for m in msgs],
            "stored": len(self.state.messages),
            "capacity": self.state.capacity,
        }

    @tool
    def search_messages(self, keyword: str, contact: str | None = None) -> dict[str, Any]:
        """Find stored messages whose text contains a keyword (ignoring case).

        Args:
            keyword: The word or phrase to look for.
            contact: Only messages sent to or received from this contact; all messages if omitted.
        """
        if not keyword.strip():
            raise ToolError("search_messages: the keyword is blank", code="empty_keyword")
        msgs = self.list_messages(contact)["messages"]
        needle = keyword.casefold()
        return {"messages": [m for m in msgs if needle in m["text"].casefold()]}

    @tool
    def latest_message(self) -> dict[str, Any]:
        """Show the most recent stored message (the one with the highest id)."""
        if not self.state.messages:
            raise ToolError("latest_message: there are no stored messages", code="no_messages")
        return self._view(max(self.state.messages, key=lambda m: m.id))

    @tool
    def oldest_message(self) -> dict[str, Any]:
        """Show the oldest stored message (the one with the lowest id)."""
        if not self.state.messages:
            raise ToolError("oldest_message: there are no stored messages", code="no_messages")
        return self._view(min(self.state.messages, key=lambda m: m.id))

    @tool
    def delete_message(self, message_id: int) -> dict[str, Any]:
        """Delete one stored message by its id, freeing space for new messages.

        Args:
            message_id: The id of the message to delete (see list_messages).
        """
        for i, m in enumerate(self.state.messages):
            if m.id == message_id:
                del self.state.messages[i]
                return {"status": "deleted", "message_id": message_id, "stored": len(self.state.messages)}
        raise ToolError(f"delete_message: no stored message has id {message_id}", code="unknown_message")

    @tool
    def add_contact(self, name: str) -> dict[str, Any]:
        """Add a person to the phone owner's contact list so that messages can be sent to them.

        Args:
            name: The person's name as it should appear in the contact list.
        """
        name = name.strip()
        if not name:
            raise ToolError("add_contact: the name is blank", code="empty_name")
        if name == self.state.owner:
            raise ToolError(f"add_contact: {name!r} is the phone owner", code="self_contact")
        if name in self.state.contacts:
            raise ToolError(f"add_contact: {name!r} is already a contact", code="duplicate_contact")
        self.state.contacts.append(name)
        return {"status": "added", "name": name, "contacts": len(self.state.contacts)}
