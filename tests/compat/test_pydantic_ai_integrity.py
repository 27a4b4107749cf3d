"""Random differential comparison of repair and sanitize with pydantic-ai 2.62 (the reference)."""

from __future__ import annotations

import json
import warnings
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import ModelMessagesTypeAdapter as ReferenceTA
from pydantic_ai import messages as ref

from tests._hypothesis import examples
from tests.messages.test_repair_properties import histories
from threadline import ModelMessagesTypeAdapter as OurTA
from threadline.messages import (
    DocumentUrl,
    ImageUrl,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextContent,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UploadedFile,
    UserPromptPart,
    repair_messages,
    sanitize_messages,
)


def both(history: list[Any]) -> tuple[list[Any], list[Any]]:
    raw = OurTA.dump_json(history)
    return OurTA.validate_json(raw), ReferenceTA.validate_json(raw)


@settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories, st.booleans())
def test_repair_matches_reference(history: list[Any], repair_last: bool) -> None:
    ours, theirs = both(history)
    expected = json.loads(ReferenceTA.dump_json(ref.repair_messages(theirs, repair_last_response=repair_last)))
    assert json.loads(OurTA.dump_json(repair_messages(ours, repair_last_response=repair_last))) == expected


urls = st.sampled_from(['https://x/a.png', 'file:///etc/passwd', 's3://b/k.pdf', 'relative/p.png', 'HTTP://X/b.png'])
content_items = st.one_of(
    st.text(max_size=4),
    st.builds(TextContent, st.text(max_size=4), metadata=st.none() | st.just({'a': 1})),
    st.builds(
        ImageUrl, urls, media_type=st.just('image/png'), force_download=st.sampled_from([False, True, 'allow-local'])
    ),
    st.builds(DocumentUrl, urls, media_type=st.just('application/pdf')),
    st.builds(UploadedFile, st.just('file-1'), st.just('openai')),
)
sanitize_requests = st.builds(
    ModelRequest,
    st.lists(
        st.one_of(
            st.builds(SystemPromptPart, st.text(max_size=4)),
            st.builds(UserPromptPart, st.text(max_size=4) | st.lists(content_items, max_size=4)),
            st.builds(
                ToolReturnPart,
                st.just('t'),
                st.lists(content_items, max_size=3) | st.text(max_size=3),
                st.sampled_from(['c1', 'c2']),
            ),
        ),
        max_size=3,
    ),
    instructions=st.none() | st.just('client'),
    metadata=st.none() | st.just({'__pydantic_ai__': {'x': 1}}) | st.just({'app': 1, '__pydantic_ai__': {}}),
)
sanitize_responses = st.builds(
    ModelResponse,
    st.lists(
        st.one_of(
            st.builds(TextPart, st.text(max_size=4)),
            st.builds(ToolCallPart, st.just('t'), st.just({}), st.sampled_from(['c1', 'c2', 'c3'])),
        ),
        max_size=3,
    ),
    workspace_ref=st.none() | st.just({'provider': 'openai', 'id': 'w1'}),
)
options = st.fixed_dictionaries(
    {},
    optional={
        'strip_system_prompts': st.booleans(),
        'strip_instructions': st.booleans(),
        'allowed_file_url_schemes': st.sampled_from([('http', 'https'), ('http', 'https', 's3'), ('file',)]),
        'allowed_file_url_force_download': st.sampled_from([(), (True,), ('allow-local',)]),
        'allow_uploaded_files': st.booleans(),
        'strip_workspace_refs': st.booleans(),
        'resolved_tool_call_ids': st.sampled_from([(), ('c1',), ('c1', 'c2', 'c3')]),
    },
)


@settings(max_examples=examples(1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(sanitize_requests | sanitize_responses, max_size=6), options)
def test_sanitize_matches_reference(history: list[Any], kwargs: dict[str, Any]) -> None:
    ours, theirs = both(history)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        expected = json.loads(ReferenceTA.dump_json(ref.sanitize_messages(theirs, **kwargs)))
        got = json.loads(OurTA.dump_json(sanitize_messages(ours, **kwargs)))
    assert got == expected
