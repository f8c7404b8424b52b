"""Python source from a Graph, in the layout torch.fx generates (``gm.code``): one statement per
node, ``;  a = b = None`` after a value's last use so memory is freed as in torch, operators
written as Python syntax, ``getattr`` with a name written as attribute access."""
from __future__ import annotations

import builtins
import enum
import math
import operator
import re

from .node import Node, _qualified_name
from ._names import torch_for_code, torch_name, type_repr

# operator functions written back as the Python syntax they came from
_BINARY = {"add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}", "truediv": "{} / {}",
           "mod": "{} % {}", "pow": "{} ** {}", "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}",
           "or_": "{} | {}", "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}", "eq": "{} == {}",
           "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}", "ge": "{} >= {}"}
_UNARY = {"neg": "-{}", "pos": "+{}", "invert": "~{}"}
SYNTAX = {**_BINARY, **_UNARY}


def base_globals() -> dict:
    """The names every generated forward may use without binding them."""
    import tracegrad
    return {"torch": torch_for_code(), "device": tracegrad.device, "inf": math.inf, "nan": math.nan,
            "NoneType": type(None)}


class PythonCode:
    """Mirrors ``torch.fx.graph.PythonCode``: ``src`` (the module-level source defining
    ``forward``) and ``globals`` (what the source's free names are bound to)."""

    def __init__(self, src: str, globals: dict):
        self.src = src
        self.globals = globals


def format_target(base: str, target: str) -> str:
    """``self.sub.conv``; ``getattr(self.seq, "0")`` for a part that is no identifier."""
    r = base
    for e in target.split("."):
        r = f'{r}.{e}' if e.isidentifier() else f'getattr({r}, "{e}")'
    return r


def _type_repr(t, em) -> str:
    """An annotation class in generated code (bound as a global unless builtin or Tensor)."""
    r = type_repr(t)
    return r if "." not in r or r == "torch.Tensor" else em.add_global(r, t)


class _Emitter:
    def __init__(self, namespace):
        self.namespace = namespace
        self.globals = base_globals()

    def add_global(self, hint: str, obj) -> str:
        """The name ``obj`` goes by in the source, binding a fresh global if it needs one."""
        if torch_name(obj) is not None:
            return torch_name(obj)
        if getattr(builtins, getattr(obj, "__name__", ""), None) is obj:
            return obj.__name__
        for name, bound in self.globals.items():
            if bound is obj:
                return name
        # torch names a global after the object's defining module (``_operator_abs``)
        hint = f"{getattr(obj, '__module__', None) or ''}.{getattr(obj, '__qualname__', hint)}".lstrip(".")
        name = self.namespace.create_name(hint, obj)
        self.globals[name] = obj
        return name

    def repr(self, arg) -> str:
        import tracegrad
        if isinstance(arg, Node):
            return arg.name
        if isinstance(arg, tuple) and hasattr(arg, "_fields"):
            qual = self.add_global(_qualified_name(type(arg)), type(arg))
            return f"{qual}({', '.join(self.repr(a) for a in arg)})"
        if isinstance(arg, tuple):
            inner = ", ".join(self.repr(a) for a in arg)
            return f"({inner},)" if len(arg) == 1 else f"({inner})"
        if isinstance(arg, list):
            return "[" + ", ".join(self.repr(a) for a in arg) + "]"
        if isinstance(arg, dict):
            return "{" + ", ".join(f"{self.repr(k)}: {self.repr(v)}" for k, v in arg.items()) + "}"
        if isinstance(arg, slice):
            return f"slice({self.repr(arg.start)}, {self.repr(arg.stop)}, {self.repr(arg.step)})"
        if isinstance(arg, tracegrad.dtype):
            return "torch." + repr(arg).rpartition(".")[2]
        if isinstance(arg, tracegrad.device):
            return f"device({str(arg)!r})"
        if isinstance(arg, enum.Enum):
            cls = self.add_global(_qualified_name(type(arg)), type(arg))
            return f"{cls}.{arg.name}"
        if isinstance(arg, type) or callable(arg) and not isinstance(arg, (str, bytes)):
            return self.add_global(_qualified_name(arg), arg)
        return repr(arg)

    def args(self, args, kwargs) -> str:
        parts = [self.repr(a) for a in args] + [f"{k} = {self.repr(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)


def python_code(nodes, namespace, root_module: str, verbose: bool = False,
                wrapped_fns=()) -> PythonCode:
    """The source and globals of ``def forward(<root_module>, ...)`` computing ``nodes``."""
    em = _Emitter(namespace.copy())
    free_vars, body = [], []
    last_use = {}
    for node in reversed(nodes):
        for inp in node.all_input_nodes:
            last_use.setdefault(inp, node)
    commented = False   # the comment line written last (verbose)
    for node in nodes:
        if node.op == "placeholder":
            ann = f" : {_type_repr(node.type, em)}" if node.type is not None else ""
            default = f" = {em.repr(node.args[0])}" if node.args else ""
            free_vars.append(f"{node.target}{ann}{default}")
            raw = node.target.replace("*", "")
            if raw != node.name:
                body.append(f"{node.name} = {raw}\n")
            continue
        if verbose:
            where = _last_frame(node.stack_trace)
            if where != commented:
                body.append(f"# {where}\n" if where else "# No stacktrace found for following nodes\n")
                commented = where
        body.append(_statement(node, em, root_module))
        if node.op == "output":
            body.append("\n")
            continue
        dead = [n for n in node.all_input_nodes if last_use[n] is node]   # freed in argument order
        if not node.users:
            dead.append(node)
        body.append(f";  {' = '.join([n.name for n in dead] + ['None'])}\n" if dead else "\n")
    code = "".join(body) or "pass\n"
    code = "\n".join("    " + line for line in code.split("\n"))
    params = ", ".join([root_module] + free_vars)
    out = [n for n in nodes if n.op == "output"]
    returns = f" -> {_type_repr(out[0].type, em)}" if out and out[0].type is not None else ""
    # re-register wrapped functions under their global names, so a trace of this code keeps
    # them leaves
    wrapped = [em.add_global(_qualified_name(n.target), n.target) for n in nodes
               if n.op == "call_function" and n.target in wrapped_fns]
    wrap_stmts = "\n".join(f'torch.fx._symbolic_trace.wrap("{name}")' for name in dict.fromkeys(wrapped))
    src = f"\n{wrap_stmts}\n\ndef forward({params}){returns}:\n{code}"
    return PythonCode(src, em.globals)


def _last_frame(stack_trace):
    """``File: <path>:<line> in <fn>, code: <line of code>`` of the innermost frame, or None."""
    if not stack_trace:
        return None
    lines = stack_trace.strip().split("\n")
    for i in range(len(lines) - 1, -1, -1):
        m = re.match(r'\s*File "(.+)", line (\d+), in (.+)', lines[i])
        if m:
            code = lines[i + 1].strip() if i + 1 < len(lines) else ""
            return f"File: {m.group(1)}:{m.group(2)} in {m.group(3)}, code: {code}"
    return None


def _statement(node, em, root_module) -> str:
    name, target = node.name, node.target
    if node.op == "output":
        return f"return {em.repr(node.args[0])}"
    if node.op == "get_attr":
        return f"{name} = {format_target(root_module, target)}"
    if node.op == "call_module":
        return f"{name} = {format_target(root_module, target)}({em.args(node.args, node.kwargs)})"
    if node.op == "call_method":
        return f"{name} = {format_target(em.repr(node.args[0]), target)}({em.args(node.args[1:], node.kwargs)})"
    # call_function
    if target is getattr and len(node.args) == 2 and not node.kwargs and isinstance(node.args[1], str) \
            and node.args[1].isidentifier():
        return f"{name} = {format_target(em.repr(node.args[0]), node.args[1])}"
    fname = getattr(target, "__name__", None)
    if getattr(operator, fname or "", None) is target and fname in SYNTAX and not node.kwargs \
            and SYNTAX[fname].count("{}") == len(node.args):
        return f"{name} = {SYNTAX[fname].format(*(em.repr(a) for a in node.args))}"
    return f"{name} = {em.add_global(_qualified_name(target), target)}({em.args(node.args, node.kwargs)})"

