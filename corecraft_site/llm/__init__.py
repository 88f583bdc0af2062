"""Talking to chat models over any OpenAI-compatible endpoint, and a scripted server that stands in for one."""

from corecraft_site.llm.client import (
    ChatClient,
    Completion,
    EndpointError,
    RetryPolicy,
    ToolCall,
    chat_client_shared,
)

__all__ = ["ChatClient", "Completion", "EndpointError", "RetryPolicy", "ToolCall", "chat_client_shared"]
