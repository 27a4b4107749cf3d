"""What sibling packages need of the message model beyond its public names.

The codec (`encoder`, `enc_hook`, `decode_messages`, `to_python`) writes and reads the wire form
shared with pydantic-ai; stores, providers, the audit and envelopes use it so that bytes written by
one are read by another without a second format. The content kinds (`MULTIMODAL_TYPES`,
`RequestPartBase`, `Base64Bytes`) let them check content without importing private modules.
"""

from __future__ import annotations

from threadline.messages._adapter import to_python
from threadline.messages._codec import decode_messages, enc_hook, encoder
from threadline.messages._content import MULTIMODAL_TYPES, Base64Bytes
from threadline.messages._parts import _RequestPart as RequestPartBase
from threadline.messages._repair import SYNTHESIZED_METADATA_KEY

__all__ = [
    'MULTIMODAL_TYPES',
    'SYNTHESIZED_METADATA_KEY',
    'Base64Bytes',
    'RequestPartBase',
    'decode_messages',
    'enc_hook',
    'encoder',
    'to_python',
]
