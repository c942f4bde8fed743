"""Scripted players of the dialogues graph and of episodes (reply = pure function of the last
message), shared by the construction and the pipeline tests."""

from __future__ import annotations

#: the first words of each role's system prompt, as ``scripted_chat.by_task`` keys
USER = "You play the user"
ASSISTANT = "You are an AI assistant that helps"


# -- a food order: the password only when asked (two user turns), two calls on the real sandbox -------
def food_user(last: str, messages: list[dict]) -> str:
    if not last.startswith("Assistant:"):
        return '{"message": "Order two Fried Rice from Golden Wok for me, I am Mina.", "goal_met": false}'
    if "password" in last:
        return '{"message": "It is tulip-88.", "goal_met": false}'
    return '{"message": "Thanks!", "goal_met": true}'


def food_assistant(last: str, messages: list[dict]) -> str:
    if last.startswith("User: Order"):
        return '{"message": "Sure. What is your food-app password?"}'
    if last.startswith("User: It is"):
        return '{"tool_calls": [{"name": "food_login", "arguments": {"username": "Mina", "password": "tulip-88"}}]}'
    if "food_login" in last:
        return (
            '{"tool_calls": [{"name": "place_order", "arguments": {"restaurant": "Golden Wok", '
            '"items": [{"dish": "Fried Rice", "quantity": 2}]}}]}'
        )
    return '{"message": "Your order of two Fried Rice from Golden Wok is placed."}'


FOOD = {USER: food_user, ASSISTANT: food_assistant}


# -- Wi-Fi off: a failed real call, the recovery, and calls in parallel -----------------------------------
def wifi_assistant(last: str, messages: list[dict]) -> str:
    if last.startswith("User:"):
        return '{"tool_calls": [{"name": "send_message", "arguments": {"recipient": "Priya", "text": "%s"}}]}' % TEXT
    if "send_message" in last and "offline" in last:
        return (
            '{"tool_calls": [{"name": "enable_wifi", "arguments": {}}, '
            '{"name": "send_message", "arguments": {"recipient": "Priya", "text": "%s"}}]}' % TEXT
        )
    return '{"message": "Sent."}'


TEXT = "The slides are in your inbox."
