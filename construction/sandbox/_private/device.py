"""The ``device`` domain: the phone the other domains run on.

While the device is locked no tool of another domain runs (``device_locked``); while its Wi-Fi is
off, tools of network domains (messaging, food) fail with ``offline``. Without a ``device`` entry
in the config the phone counts as unlocked and online.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from benchsmith.schemas import StrictModel, ToolError

from .engine import Domain, domain
from .tooling import tool


class DeviceState(StrictModel):
    """Whether the phone is unlocked and online, and the PIN that unlocks it (if any)."""

    unlocked: bool = True
    wifi_on: bool = True
    pin: str | None = Field(default=None, pattern=r"^[0-9]{4,8}$")


@domain("device")
class Device(Domain):
    """The phone: lock state and Wi-Fi."""

    State = DeviceState
    state: DeviceState

    def guard(self, caller: Domain, tool_name: str) -> None:
        if not self.state.unlocked:
            raise ToolError(f"{tool_name}: the device is locked; unlock it first (unlock_device)", code="device_locked")
        if caller.needs_network and not self.state.wifi_on:
            raise ToolError(
                f"{tool_name} needs the network but Wi-Fi is off; turn it on first (enable_wifi)", code="offline"
            )

    def _require_unlocked(self, what: str) -> None:
        if not self.state.unlocked:
            raise ToolError(f"{what}: the device is locked; unlock it first (unlock_device)", code="device_locked")

    @tool
    def device_status(self) -> dict[str, Any]:
        """Show whether the phone is unlocked and whether its Wi-Fi is on."""
        return {"unlocked": self.state.unlocked, "wifi_on": self.state.wifi_on}

    @tool
    def unlock_device(self, pin: str | None = None) -> dict[str, Any]:
        """Unlock the phone so that apps can be used.

        Args:
            pin: The phone's PIN code (digits); needed only when the phone has a PIN.
        """
        if self.state.unlocked:
            return {"unlocked": True, "changed": False}
        if self.state.pin is not None:
            if pin is None:
                raise ToolError("unlock_device: this phone has a PIN; pass it as pin", code="pin_required")
            if pin != self.state.pin:
                raise ToolError("unlock_device: wrong PIN", code="wrong_pin")
        self.state.unlocked = True
        return {"unlocked": True, "changed": True}

    @tool
    def lock_device(self) -> dict[str, Any]:
        """Lock the phone; apps cannot be used until it is unlocked again."""
        changed = self.state.unlocked
        self.state.unlocked = False
        return {"unlocked": False, "changed": changed}

    @tool
    def enable_wifi(self) -> dict[str, Any]:
        """Turn the phone's Wi-Fi on so that online apps (messaging, food delivery) work."""
        self._require_unlocked("enable_wifi")
        changed = not self.state.wifi_on
        self.state.wifi_on = True
        return {"wifi_on": True, "changed": changed}

    @tool
    def disable_wifi(self) -> dict[str, Any]:
        """Turn the phone's Wi-Fi off; online apps stop working until it is turned on."""
        self._require_unlocked("disable_wifi")
        changed = self.state.wifi_on
        self.state.wifi_on = False
        return {"wifi_on": False, "changed": changed}
