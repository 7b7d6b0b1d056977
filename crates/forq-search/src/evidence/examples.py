import ast, copy, doctest, importlib.util, json, math, os, random, re, signal, sys

# The report goes, behind a nonce read from stdin before any code under
# examination is imported, to a copy of stdout taken now: what that code
# prints (or prints at exit) is not the report.
NONCE = sys.stdin.readline().strip()
REPORT = os.dup(1)
root = sys.argv[1]
sys.path.insert(0, root)
sys.setrecursionlimit(3000)
BUDGET = float(sys.argv[2])


class Slow(BaseException):
    pass


def alarm(*_):
    raise Slow()


signal.signal(signal.SIGALRM, alarm)


def timed(fn):
    signal.setitimer(signal.ITIMER_REAL, BUDGET)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def function_at(tree, line=None, name=None):
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if name is not None and node.name == name.split(".")[-1]:
                return node
            if line is not None and node.lineno <= line <= node.end_lineno:
                if best is None or node.lineno >= best.lineno:
                    best = node
    return best


ARROW = re.compile(r"^\s*(?:>>>\s*)?(?:for\s+|assert\s+)?(.*?\))\s*(?:==>|==|=>|->|\u279e|returns|should return)\s*(.+?)\s*$")


def literal_calls(doc, name):
    # `name(args) == value` lines: (args, expected).
    out = []
    for line in doc.splitlines():
        m = ARROW.match(line)
        if not m or not m.group(1).lstrip().startswith(name + "("):
            continue
        value = m.group(2).split(" #")[0].rstrip(".").strip()
        try:
            call = ast.parse(m.group(1).strip(), mode="eval").body
            args = tuple(ast.literal_eval(a) for a in call.args)
            expected = ast.literal_eval(value)
        except Exception:
            continue
        if isinstance(call, ast.Call) and not call.keywords:
            out.append((args, expected))
    return out


def doctest_calls(examples, name):
    # The literal argument tuples of the doctests' calls of `name`.
    out = []
    for ex in examples:
        try:
            node = ast.parse(ex.source.strip(), mode="eval").body
        except SyntaxError:
            continue
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == name \
                    and not call.keywords:
                try:
                    out.append(tuple(ast.literal_eval(a) for a in call.args))
                except Exception:
                    pass
    return out


SKIP = {"node_modules", "__pycache__", "site-packages", "venv", "build", "dist"}


def test_files(limit=400):
    # The repository's test files, in a stable order.
    out = []
    for here, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP and not d.startswith("."))
        rel = os.path.relpath(here, root)
        in_tests = any(part in ("test", "tests", "testing") for part in rel.split(os.sep))
        for f in sorted(files):
            if f.endswith(".py") and (in_tests or f.startswith("test_") or f.endswith("_test.py")):
                out.append(os.path.join(here, f))
                if len(out) >= limit:
                    return out
    return out


def names_it(node, name):
    # `name`, or `module.name`.
    return (isinstance(node, ast.Name) and node.id == name) or \
        (isinstance(node, ast.Attribute) and node.attr == name)


def test_calls(name, limit=60):
    # The literal calls of `name` in the tests, each with the test it is in:
    # [(test, args)]. A name bound to it (`candidate = name`, or a
    # parameter it is passed as: `check(name)` with `def check(candidate)`)
    # stands for it too.
    out, seen = [], set()
    for path in test_files():
        try:
            text = open(path, encoding="utf-8").read()
            if name not in text:
                continue
            tree = ast.parse(text)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        defs = {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        aliases = {name}
        for n in ast.walk(tree):
            if isinstance(n, ast.Assign) and names_it(n.value, name):
                aliases.update(t.id for t in n.targets if isinstance(t, ast.Name))
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in defs:
                params = defs[n.func.id].args.args
                aliases.update(params[i].arg for i, a in enumerate(n.args[:len(params)]) if names_it(a, name))
        scopes = []
        for n in tree.body:
            if isinstance(n, ast.ClassDef):
                scopes.extend((m.name, m) for m in n.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)))
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                scopes.append((n.name, n))
        # A call both a test and a helper of tests make counts as the test's.
        scopes.sort(key=lambda s: not s[0].startswith("test"))
        for test, scope in scopes:
            for call in ast.walk(scope):
                if not isinstance(call, ast.Call) or call.keywords or not call.args:
                    continue
                f = call.func
                if not ((isinstance(f, ast.Name) and f.id in aliases) or
                        (isinstance(f, ast.Attribute) and f.attr == name)):
                    continue
                try:
                    args = tuple(ast.literal_eval(a) for a in call.args)
                except (ValueError, TypeError, SyntaxError, RecursionError):
                    continue
                key = repr(args)
                if key not in seen:
                    seen.add(key)
                    out.append((test, args))
                    if len(out) >= limit:
                        return out
    return out


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
        except TypeError:
            return False
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def nudged(value, rng):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice([-2, -1, 1, 2, 3, -value, value])
    if isinstance(value, float):
        return round(value + rng.choice([-1.5, -0.5, 0.25, 0.5, 1.0]), 3)
    if isinstance(value, str):
        if not value:
            return rng.choice(["a", " ", "A1"])
        i = rng.randrange(len(value))
        return rng.choice([value[:i], value[i:], value[::-1], value.swapcase(),
                           value + value[i], value[:i] + value[i + 1:]])
    if isinstance(value, (list, tuple)):
        items = list(value)
        pick = rng.randrange(5)
        if pick == 0 and items:
            items.pop(rng.randrange(len(items)))
        elif pick == 1 and items:
            items.append(nudged(rng.choice(items), rng))
        elif pick == 2:
            rng.shuffle(items)
        elif pick == 3:
            items.reverse()
        elif items:
            i = rng.randrange(len(items))
            items[i] = nudged(items[i], rng)
        return type(value)(items)
    return value


def near(args_list, count):
    rng = random.Random(11)
    seen, out = {repr(a) for a in args_list}, []
    for _ in range(count * 5):
        if not args_list or len(out) >= count:
            break
        base = list(rng.choice(args_list))
        if not base:
            break
        i = rng.randrange(len(base))
        base[i] = nudged(base[i], rng)
        t = tuple(base)
        if repr(t) not in seen:
            seen.add(repr(t))
            out.append(t)
    return out


def outcome(fn, args):
    try:
        r = timed(lambda: fn(*copy.deepcopy(args)))
        if isinstance(r, float):
            r = round(r, 6)
        return "ok " + repr(r)[:200]
    except Slow:
        return "slow"
    except BaseException as e:
        return "raised " + type(e).__name__


def examine(path, line, name):
    text = open(path, encoding="utf-8").read()
    node = function_at(ast.parse(text), line, name)
    if node is None:
        return None, None
    doc = ast.get_docstring(node) or ""
    spec = importlib.util.spec_from_file_location("forq_evidence_subject", path)
    mod = importlib.util.module_from_spec(spec)
    try:
        timed(lambda: spec.loader.exec_module(mod))
    except BaseException as e:
        return node.name, {"examples": 0, "passed": 0, "near": [], "error": type(e).__name__}
    fn = getattr(mod, node.name, None)
    examples = doctest.DocTestParser().get_examples(doc)
    calls = literal_calls(doc, node.name)
    passed = 0
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    for ex in examples:
        test = doctest.DocTest([ex], dict(vars(mod)), node.name, path, 0, None)
        try:
            result = timed(lambda: runner.run(test, out=lambda _: None, clear_globs=True))
            passed += result.failed == 0
        except BaseException:
            pass
    for args, expected in calls:
        if fn is None:
            continue
        try:
            passed += same(timed(lambda: fn(*copy.deepcopy(args))), expected)
        except BaseException:
            pass
    tested = test_calls(node.name) if fn else []
    args_list = [a for a, _ in calls] + doctest_calls(examples, node.name) + [a for _, a in tested]
    near_out = [outcome(fn, a) for a in near(args_list, int(sys.argv[3]))] if fn else []
    return node.name, {"examples": len(examples) + len(calls), "passed": passed, "near": near_out,
                       "calls": [[test, outcome(fn, a)] for test, a in tested]}


result = {}
for spec_ in sys.argv[4:]:
    if "::" in spec_:
        file, name = spec_.split("::", 1)
        line = None
    else:
        file, _, l = spec_.rpartition(":")
        name, line = None, int(l)
    try:
        found, data = examine(root + "/" + file, line, name)
    except BaseException as e:
        found, data = name, {"examples": 0, "passed": 0, "near": [], "error": type(e).__name__}
    if found:
        result[file + "::" + found] = data
report = (NONCE + " " + json.dumps(result) + "\n").encode()
while report:
    report = report[os.write(REPORT, report):]
os._exit(0)
