"""ToolAssess: tool-use awareness, selection, multi-task ASA/PSA and TAS."""
