"""Keys and the one MAC, for the packages that sign or check something: `Keyring` and `SigningKey`
(also exported from `threadline.trust`), `now_utc` (the clock keys retire by), and `mac`,
`mac_hex`, `same_tag`, `text_bytes` (HMAC-SHA256 and its constant-time comparison). No module
outside `threadline.trust` calls `hmac` itself."""

from __future__ import annotations

from threadline.trust._keys import Keyring, SigningKey, now_utc
from threadline.trust._mac import mac, mac_hex, same_tag, text_bytes

__all__ = ['Keyring', 'SigningKey', 'mac', 'mac_hex', 'now_utc', 'same_tag', 'text_bytes']
