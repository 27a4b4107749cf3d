"""Chat UI protocols: Threadline histories to and from what a browser holds (`threadline.ui.vercel_ai`).

Conversion happens only at the boundary: Threadline's own messages are what is stored and run, and
each adapter says what each direction keeps and what it drops.
"""

__all__: list[str] = []
