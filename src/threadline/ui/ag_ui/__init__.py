"""The AG-UI protocol (extra `ui`, the `ag-ui-protocol` package): messages both ways (`AGUIAdapter`)
and the event stream of a run (`ag_ui_events`, `encode`)."""

from threadline.ui.ag_ui._adapter import AGUIAdapter
from threadline.ui.ag_ui._stream import ag_ui_events, encode

__all__ = ['AGUIAdapter', 'ag_ui_events', 'encode']
