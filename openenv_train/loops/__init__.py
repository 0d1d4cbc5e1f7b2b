"""Background event loops for sync code that drives async clients and servers: the project's threads.

:class:`EventLoopThread` is one loop of its own in a daemon thread (a server started from sync code, a runner);
:class:`LoopThread` is the one such loop a process shares for its sync clients; :func:`run_on_loop` runs a coroutine
on it. Kept out of ``core``, whose wire types, codecs and session logic do no I/O and start no threads.
"""

from ._threads import EventLoopThread, LoopThread, run_on_loop

__all__ = ["EventLoopThread", "LoopThread", "run_on_loop"]
