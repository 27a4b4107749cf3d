"""Hypothesis strategies for pydantic-ai 2.62 histories built from its own classes (the reference,
a test-only dependency): every part and content kind both libraries model, with the values that
stress a converter (empty text, odd timestamps, nested tool content, metadata)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st
from pydantic_ai import messages as ref

__all__ = [
    'reference_histories',
    'usage',
    'request_parts',
    'requests',
    'response_parts',
    'responses',
    'stamps',
    'texts',
    'ids',
]

T0 = datetime(2025, 1, 1, tzinfo=UTC)
texts = st.text(max_size=12)
stamps = st.integers(0, 10**6).map(lambda s: T0 + timedelta(seconds=s, microseconds=s % 7))
ids = st.text(alphabet='abcdef0123456789_-', min_size=1, max_size=8)
json_leaf = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | texts
metadata = st.none() | st.dictionaries(
    texts, st.recursive(json_leaf, lambda i: st.lists(i, max_size=3), max_leaves=5), max_size=3
)
urls = st.sampled_from(
    ['https://example.com/a.png', 'https://example.com/d.pdf', 'https://example.com/x', 's3://b/k.mp3']
)

user_content = st.one_of(
    texts,
    st.builds(ref.TextContent, texts, metadata=metadata),
    st.builds(ref.ImageUrl, urls, media_type=st.just('image/png'), force_download=st.booleans()),
    st.builds(ref.DocumentUrl, urls, media_type=st.just('application/pdf')),
    st.builds(ref.AudioUrl, urls, media_type=st.just('audio/mpeg')),
    st.builds(ref.VideoUrl, urls, media_type=st.just('video/mp4')),
    st.builds(ref.BinaryContent, st.binary(max_size=12), media_type=st.sampled_from(['image/png', 'application/pdf'])),
    st.builds(ref.UploadedFile, ids, st.sampled_from(['openai', 'anthropic'])),
    st.builds(ref.CachePoint, ttl=st.sampled_from(['5m', '1h'])),
)
tool_content = st.recursive(
    json_leaf | st.builds(ref.ImageUrl, urls, media_type=st.just('image/png')),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
request_parts = st.one_of(
    st.builds(ref.SystemPromptPart, texts, timestamp=stamps, dynamic_ref=st.none() | texts, metadata=metadata),
    st.builds(ref.UserPromptPart, texts | st.lists(user_content, max_size=4), timestamp=stamps),
    st.builds(
        ref.ToolReturnPart,
        texts,
        tool_content,
        ids,
        metadata=metadata,
        timestamp=stamps,
        outcome=st.sampled_from(['success', 'failed', 'denied', 'interrupted']),
    ),
    st.builds(
        ref.RetryFeedbackPart,
        texts,
        timestamp=stamps,
        retry=st.builds(
            ref.RetryInfo,
            st.sampled_from(['model_retry', 'no_output']),
            attempt=st.integers(1, 3),
            max_retries=st.integers(1, 3),
        ),
    ),
    st.builds(ref.CompactionPart, st.none() | texts, metadata=metadata),
)
args = st.none() | st.dictionaries(texts, json_leaf, max_size=3) | st.sampled_from(['{"a": 1}', '{"a": 1, "b": "tr'])
response_parts = st.one_of(
    st.builds(ref.TextPart, texts, id=st.none() | ids),
    st.builds(ref.ThinkingPart, texts, signature=st.none() | ids),
    st.builds(ref.ToolCallPart, texts, args, ids),
    st.builds(ref.NativeToolCallPart, texts, args, ids, provider_name=st.just('openai')),
    st.builds(ref.NativeToolReturnPart, texts, tool_content, ids, timestamp=stamps, provider_name=st.just('openai')),
    st.builds(ref.FilePart, st.builds(ref.BinaryContent, st.binary(max_size=8), media_type=st.just('image/png'))),
)
usage = st.builds(
    ref.RequestUsage,
    input_tokens=st.integers(0, 10**6),
    output_tokens=st.integers(0, 10**6),
    cache_read_tokens=st.integers(0, 100),
    details=st.dictionaries(st.sampled_from(['reasoning', 'x']), st.integers(0, 9)),
)
requests = st.builds(
    ref.ModelRequest,
    st.lists(request_parts, max_size=4),
    timestamp=st.none() | stamps,
    instructions=st.none() | texts,
    run_id=st.none() | ids,
    conversation_id=st.none() | ids,
    metadata=metadata,
    state=st.sampled_from(['complete', 'interrupted']),
)
responses = st.builds(
    ref.ModelResponse,
    st.lists(response_parts, max_size=4),
    usage=usage,
    model_name=st.none() | texts,
    timestamp=stamps,
    provider_name=st.none() | texts,
    provider_response_id=st.none() | ids,
    finish_reason=st.none() | st.sampled_from(['stop', 'length', 'tool_call']),
    run_id=st.none() | ids,
    metadata=metadata,
    state=st.sampled_from(['complete', 'incomplete', 'suspended', 'interrupted']),
)


reference_histories = st.lists(requests | responses, max_size=6)
