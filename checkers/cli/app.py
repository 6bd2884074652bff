"""The root of the command line: the `groupspec` app, and `main`, which runs it with one-line usage errors
and clean stops on SIGTERM and Ctrl-C (exit codes: 0 everything holds, 1 a property or scenario fails, 2 bad
input, 130 and 143 the signals)."""
from __future__ import annotations

import _thread
import errno
import os
import signal
import sys
import time

import typer

from groupspec.checkers.console import one_line, say_error


app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="An executable spec of Kafka's classic consumer-group coordinator, and its checkers.")


class Terminated(BaseException):
    """SIGTERM: raised in the main process so that every `finally` runs (the search's workers are
    stopped, the progress display closed); not an Exception, so no `except Exception` keeps it."""


# Click's usage errors (typer vendors click: its base class is reached through a public one)
_CLICK_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


# Where a stop by signal stands.  `owed`: a signal whose exception a finalizer dropped, being sent again
# until it raises where it is not dropped; `raised`: the stop is under way (a signal sent again, or a
# second one from `timeout` and a supervisor both, must not interrupt the cleanup or the message the
# first one started: it would end in a traceback); `in_hook`: sys.unraisablehook runs, and what a handler
# raised there would be dropped for good.
_STOP = {"owed": None, "raised": False, "in_hook": False}


def _stop(signum, exc: BaseException) -> None:
    if _STOP["in_hook"]:
        _owe(signum)
        return
    if _STOP["raised"] and _STOP["owed"] is None:
        return
    _STOP["owed"], _STOP["raised"] = None, True
    raise exc


def _on_sigterm(signum, frame):
    _stop(signum, Terminated())


def _on_sigint(signum, frame):
    _stop(signum, KeyboardInterrupt())


def _owe(signum) -> None:
    """Send `signum` again until its handler raises outside a finalizer and the hook: from a thread of its
    own, which runs when this one lets go of the interpreter.  Once is not enough: under load the thread
    can run while the hook still runs, where the handler must not raise."""
    if _STOP["owed"] == signum:         # a thread sends it already
        return
    _STOP["owed"] = signum

    def resend():
        while _STOP["owed"] == signum:
            os.kill(os.getpid(), signum)
            time.sleep(0.01)
    _thread.start_new_thread(resend, ())      # (threading's start would wait for it)


def _unraisable(hook_args) -> None:
    """sys.unraisablehook: a signal that came while Python ran a finalizer (a `__del__`, a weakref or gc
    callback) raised its exception there, and Python drops what a finalizer raises (printing a traceback):
    the run would go on.  The signal is owed instead (`_owe`): sent again until its handler raises in the
    code the run was in (in another finalizer, it comes back here)."""
    _STOP["in_hook"] = True
    try:
        exc = hook_args.exc_value
        if isinstance(exc, (Terminated, KeyboardInterrupt)):
            _owe(signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)
        else:
            sys.__unraisablehook__(hook_args)
    finally:
        _STOP["in_hook"] = False


def main() -> None:
    """Run the CLI: usage errors are one line (exit 2); SIGTERM and SIGINT stop the run cleanly
    (the search's worker processes with it) with exit codes 143 and 130."""
    _STOP.update(owed=None, raised=False, in_hook=False)
    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(signal.SIGINT, _on_sigint)
    sys.unraisablehook = _unraisable
    if sys.stdout is None:      # started with the standard output closed (`>&-`): results would vanish
        say_error("groupspec: the standard output is closed; nothing could be printed (redirect it to a file or "
                  "/dev/null)")
        sys.exit(2)
    try:
        code = app(standalone_mode=False, prog_name="groupspec")
        sys.stdout.flush()              # a full or closed stdout shows here, not at exit
    except OSError as e:                # stdout on a full device, say (a closed pipe ends quietly)
        code = 1 if e.errno == errno.EPIPE else 2
        if code == 2:
            where = f" ({e.filename})" if e.filename else " (writing the standard output)"
            say_error(f"groupspec: {e.strerror or e}{where}")
        try:
            sys.stdout = open(os.devnull, "w")      # nothing more to flush at exit
        except OSError:                 # pragma: no cover
            pass
    except _CLICK_ERROR as e:   # a usage error: an unknown option, a value of the wrong type, no command
        ctx = getattr(e, "ctx", None)
        where = ctx.command_path if ctx else "groupspec"
        if type(e).__name__ == "NoArgsIsHelpError":
            # the error made the help when it was raised: typer's rich help printed itself then (asking again
            # would print it twice) and left ""; a plain help is the message
            text = e.format_message()
            if text:
                say_error(text)
        else:
            say_error(f"{where}: {one_line(e.format_message())} (`{where} --help` lists the options)")
        code = e.exit_code
    except (KeyboardInterrupt, typer.Abort):
        signal.signal(signal.SIGINT, signal.SIG_IGN)     # a second Ctrl-C now would be a traceback
        code = 130
    except Terminated:
        say_error("groupspec: terminated (SIGTERM); the run was stopped")
        code = 143
    sys.exit(code if isinstance(code, int) else 0)
