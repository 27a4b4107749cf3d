"""The names a differential script imports, from pydantic-ai 2.62 or from Threadline, so one script
body runs on either library."""

from __future__ import annotations

from types import SimpleNamespace


def library(name: str) -> SimpleNamespace:
    """`'ref'`: pydantic-ai's names; `'ours'`: Threadline's, imported as a porting user would."""
    if name == 'ref':
        from pydantic_ai import (
            Agent,
            ApprovalRequired,
            BinaryImage,
            CallDeferred,
            DeferredToolRequests,
            DeferredToolResults,
            ModelRetry,
            NativeOutput,
            PromptedOutput,
            RunContext,
            ToolApproved,
            ToolDenied,
            ToolOutput,
        )
        from pydantic_ai.capabilities import AbstractCapability, CombinedCapability, HandleDeferredToolCalls, Hooks
        from pydantic_ai.exceptions import ToolFailed
        from pydantic_ai.messages import (
            EnqueuedMessagesEvent,
            ModelRequest,
            ModelResponse,
            TextPart,
            ToolCallPart,
            ToolReturn,
            UserPromptPart,
        )
        from pydantic_ai.models.function import DeltaToolCall, FunctionModel
        from pydantic_ai.models.test import TestModel
        from pydantic_ai.run import AgentRunResult
    else:
        from threadline import (
            Agent,
            ApprovalRequired,
            BinaryImage,
            CallDeferred,
            DeferredToolRequests,
            DeferredToolResults,
            ModelRetry,
            NativeOutput,
            PromptedOutput,
            RunContext,
            ToolApproved,
            ToolDenied,
            ToolOutput,
        )
        from threadline.agent import AgentRunResult
        from threadline.capabilities import AbstractCapability, CombinedCapability, HandleDeferredToolCalls, Hooks
        from threadline.exceptions import ToolFailed
        from threadline.messages import (
            EnqueuedMessagesEvent,
            ModelRequest,
            ModelResponse,
            TextPart,
            ToolCallPart,
            ToolReturn,
            UserPromptPart,
        )
        from threadline.models.function import DeltaToolCall, FunctionModel
        from threadline.models.test import TestModel
    return SimpleNamespace(
        AbstractCapability=AbstractCapability,
        AgentRunResult=AgentRunResult,
        CombinedCapability=CombinedCapability,
        EnqueuedMessagesEvent=EnqueuedMessagesEvent,
        Hooks=Hooks,
        ModelRequest=ModelRequest,
        UserPromptPart=UserPromptPart,
        ApprovalRequired=ApprovalRequired,
        BinaryImage=BinaryImage,
        CallDeferred=CallDeferred,
        DeferredToolResults=DeferredToolResults,
        HandleDeferredToolCalls=HandleDeferredToolCalls,
        ToolApproved=ToolApproved,
        ToolDenied=ToolDenied,
        ToolFailed=ToolFailed,
        ToolReturn=ToolReturn,
        DeltaToolCall=DeltaToolCall,
        Agent=Agent,
        DeferredToolRequests=DeferredToolRequests,
        FunctionModel=FunctionModel,
        ModelResponse=ModelResponse,
        ModelRetry=ModelRetry,
        NativeOutput=NativeOutput,
        PromptedOutput=PromptedOutput,
        RunContext=RunContext,
        TestModel=TestModel,
        TextPart=TextPart,
        ToolCallPart=ToolCallPart,
        ToolOutput=ToolOutput,
    )


def parts_of(messages: list[object], *kinds: str) -> list[list[object]]:
    """Each part of `kinds` as `[kind, tool name, args or the content's first 90 characters]`."""
    return [
        [
            p.part_kind,  # type: ignore[attr-defined]
            getattr(p, 'tool_name', None),
            p.args if p.part_kind == 'tool-call' else str(getattr(p, 'content', ''))[:90],  # type: ignore[attr-defined]
        ]
        for m in messages
        for p in m.parts  # type: ignore[attr-defined]
        if p.part_kind in kinds
    ]


def library_with(name: str, **modules: tuple[str, ...]) -> SimpleNamespace:
    """`library(name)` plus `modules`' names, each module given by its path under the package
    (`capabilities=('PrepareTools',)` imports `pydantic_ai.capabilities.PrepareTools` for 'ref',
    `threadline.capabilities.PrepareTools` for 'ours'): both libraries keep these at the same path."""
    import importlib

    root = 'pydantic_ai' if name == 'ref' else 'threadline'
    names = dict(vars(library(name)))
    for path, wanted in modules.items():
        module = importlib.import_module(f'{root}.{path}')
        names.update({attr: getattr(module, attr) for attr in wanted})
    return SimpleNamespace(**names)
