//! The mutation operators and repair templates, case by case.

use super::localize::{affinity, id_words};
use super::operators::{mutations, Parsed};
use super::*;

fn mutants(lang: Lang, src: &str) -> Vec<String> {
    mutants_of(lang, src, false)
}

fn mutants_of(lang: Lang, src: &str, templates: bool) -> Vec<String> {
    let file = Parsed::new(lang, src.to_owned(), templates).unwrap();
    mutations(&file, 0, src.len(), templates)
        .into_iter()
        .map(|m| m.applied_to(src))
        .collect()
}

#[test]
fn templates_add_bounds_reduced_conditions_and_moved_statements() {
    let src = "def f(xs, lo, hi, ok):\n    while lo < hi:\n        mid = (lo + hi) // 2\n        if xs[mid] < 5 and ok:\n            lo = mid\n        else:\n            hi = mid\n    total = 0\n    total = lo\n    return xs[lo:hi], range(lo, hi)\n";
    let with = mutants_of(Lang::Python, src, true);
    for expected in [
        "            lo = mid + 1\n",
        "            hi = mid - 1\n",
        "    while lo < hi - 1:\n",
        "        if xs[mid] < 5:\n",
        "        if ok:\n",
        "    total = lo\n    total = 0\n",
        "xs[lo:hi + 1]",
        "range(lo, hi - 1)",
    ] {
        assert!(
            with.iter().any(|s| s.contains(expected)),
            "no template with {expected:?}"
        );
    }
    assert!(with.iter().all(|s| Lang::Python.syntax_error(s).is_none()));
    // The mutate brancher alone makes none of them.
    let without = mutants_of(Lang::Python, src, false);
    assert!(!without.iter().any(|s| s.contains("lo = mid + 1")));
    assert!(!without.iter().any(|s| s.contains("if ok:")));
    assert!(with.len() > without.len());
}

#[test]
fn a_swap_that_makes_an_operation_do_nothing_leaves_the_operand_alone() {
    let src = "def f(ys, mid, k):\n    return ys[mid - 1] + (1 + k)\n";
    let m = mutants(Lang::Python, src);
    // `mid - 1` → `mid * 1` reads `mid`; `1 + k` → `1 * k` reads `k`.
    assert!(m.iter().any(|s| s.contains("ys[mid] + (1 + k)")), "{m:#?}");
    assert!(m.iter().any(|s| s.contains("ys[mid - 1] + (k)")), "{m:#?}");
    assert!(
        !m.iter().any(|s| s.contains("* 1") || s.contains("1 *")),
        "{m:#?}"
    );
    // Swaps that change the value stay as they were.
    assert!(m.iter().any(|s| s.contains("ys[mid + 1]")));
    let c = mutants(Lang::C, "int f(int a) { return a << 1; }\n");
    assert!(c.iter().any(|s| s.contains("return a >> 1;")), "{c:#?}");
}

#[test]
fn ingredient_templates_guard_widen_return_and_drop_arguments() {
    let src = "def find(xs, target):\n    \"\"\"Where target is.\"\"\"\n    i = 0\n    while i < len(xs):\n        if xs[i] == target:\n            return max(i, 0)\n        i += 1\n    return -1\n";
    let with = mutants_of(Lang::Python, src, true);
    for expected in [
        // A guard after the docstring, answering with the argument or
        // a literal the function returns.
        "\"\"\"Where target is.\"\"\"\n    if not xs:\n        return xs\n    i = 0\n",
        "    if not xs:\n        return -1\n    i = 0\n",
        // A condition widened or narrowed by another of the function's.
        "while i < len(xs) and xs[i] == target:",
        "if xs[i] == target or i < len(xs):",
        // Another value the function returns.
        "            return -1\n        i += 1",
        "    return max(i, 0)\n",
        // An argument too many.
        "return max(0)",
        "return max(i)",
    ] {
        assert!(
            with.iter().any(|s| s.contains(expected)),
            "no template with {expected:?}"
        );
    }
    assert!(with.iter().all(|s| Lang::Python.syntax_error(s).is_none()));
    let without = mutants_of(Lang::Python, src, false);
    assert!(!without.iter().any(|s| s.contains("if not xs:")));
    // JavaScript: the same guard in its own syntax, and `&&`/`||`
    // with parentheses kept around a compound ingredient.
    let js = "function f(xs, n) {\n  if (xs.length > n || n < 0) { return null; }\n  while (n > 0) { n = n - 1; }\n  return xs[n];\n}\n";
    let with = mutants_of(Lang::JavaScript, js, true);
    for expected in [
        "{\n  if (!xs) return xs;\n  if (xs.length",
        "{\n  if (!xs) return null;\n",
        "while (n > 0 && (xs.length > n || n < 0))",
    ] {
        assert!(
            with.iter().any(|s| s.contains(expected)),
            "no template with {expected:?} in {with:#?}"
        );
    }
}

#[test]
fn a_variable_is_replaced_only_by_one_in_scope_where_it_is_read() {
    let src = "def f(xs, key):\n    total = 0\n    for i, x in enumerate(xs):\n        total += x\n    result = len(xs)\n    return total\n";
    let all = mutants(Lang::Python, src);
    for expected in [
        "total += i\n",
        "total += xs\n",
        "total += key\n",
        "return result\n",
    ] {
        assert!(all.iter().any(|s| s.contains(expected)), "no {expected:?}");
    }
    // `result` is bound after the loop: not a candidate inside it.
    assert!(!all.iter().any(|s| s.contains("total += result")));
    // Nor a name the function never binds (a builtin, a global).
    assert!(!all.iter().any(|s| s.contains("total += enumerate")));
}

#[test]
fn templates_add_preconditions_wrap_values_and_guard_yields() {
    let cache = "class Cache:\n    def __init__(self, maxsize, getsizeof=None):\n        self.maxsize = maxsize\n\n    def clear(self):\n        raise KeyError(self)\n";
    let with = mutants_of(Lang::Python, cache, true);
    for expected in [
        // A precondition on a parameter, raising the usual error for
        // a bad argument, and what the file raises.
        "        if maxsize < 0:\n            raise ValueError(\"invalid maxsize\")\n        self.maxsize = maxsize\n",
        "        if maxsize < 0:\n            raise KeyError(\"invalid maxsize\")\n        self.maxsize = maxsize\n",
        "        if getsizeof is None:\n            raise KeyError(\"invalid getsizeof\")\n",
    ] {
        assert!(
            with.iter().any(|s| s.contains(expected)),
            "no template with {expected:?}"
        );
    }
    let without = mutants_of(Lang::Python, cache, false);
    assert!(!without.iter().any(|s| s.contains("invalid maxsize")));
    let src = "def link(url, title):\n    return '<' + url + ' \"' + title + '\">'\n\n\ndef _escape_title(title):\n    return title.replace('\"', '')\n\n\ndef split(it):\n    yield list(it)\n    yield it\n\n\ndef check(x):\n    if x:\n        raise KeyError(x)\n    raise KeyError(x)\n";
    let with = mutants_of(Lang::Python, src, true);
    for expected in [
        // A value passed through the file's function named after it.
        "' \"' + _escape_title(title) + '\">'",
        // A yield of an empty value guarded, through a new name.
        "    value = list(it)\n    if value:\n        yield value\n",
        "    if it:\n        yield it\n",
    ] {
        assert!(
            with.iter().any(|s| s.contains(expected)),
            "no template with {expected:?}"
        );
    }
    assert!(with.iter().all(|s| Lang::Python.syntax_error(s).is_none()));
    // The fresh name need only be free in the function: the file using
    // `value`, `item` and `chunk` elsewhere is no clash (more-itertools
    // 9.1.0's `split_after`, whose fix is this guard).
    let busy = "def f(value, item, chunk):\n    return value, item, chunk\n\n\ndef split(it):\n    for x in it:\n        yield list(it)\n";
    assert!(
        mutants_of(Lang::Python, busy, true).iter().any(|s| s
            .contains("        value = list(it)\n        if value:\n            yield value\n")),
        "no guarded yield"
    );
    // A method or a dunder is no function a value goes through: a call
    // of it needs its receiver.
    let methods = "class Box:\n    def __init__(self):\n        pass\n\n    def title_of(self):\n        return 1\n\n\ndef show(title):\n    return '<' + title + '>'\n";
    let wrapped = mutants_of(Lang::Python, methods, true);
    assert!(!wrapped.iter().any(|s| s.contains("__init__(title)")));
    assert!(!wrapped.iter().any(|s| s.contains("title_of(title)")));
    // Not the called name, not an attribute's, not `url` (no function
    // of the file is named for it).
    assert!(!with.iter().any(|s| s.contains("_escape_title(url)")));
    assert!(!with.iter().any(|s| s.contains("self._escape_title(")));
    let js = mutants_of(
        Lang::JavaScript,
        "function f(n) {\n  return n * 2;\n}\n",
        true,
    );
    assert!(
        js.iter().any(
            |s| s.contains("  if (n == null) throw new Error(\"invalid n\");\n  return n * 2;")
        ),
        "{js:#?}"
    );
    assert!(js
        .iter()
        .all(|s| Lang::JavaScript.syntax_error(s).is_none()));
}

#[test]
fn type_stubs_and_tests_are_never_repaired() {
    let stack = forq_bootstrap::Stack::custom("forq.yml", Vec::new(), "python -m pytest");
    assert!(repairable(&stack, "pkg/more.py"));
    assert!(!repairable(&stack, "pkg/more.pyi"));
    assert!(!repairable(&stack, "types/index.d.ts"));
    assert!(!repairable(&stack, "tests/test_more.py"));
}

#[test]
fn a_c_function_is_never_wrapped_around_its_own_values_nor_renamed() {
    // `count` could go through `count_of` (one argument, named for
    // it), never through `count_up`, the function being repaired: C
    // names a function through its declarator, not a `name` field.
    let src = "int count_of(int count) {\n  return count;\n}\n\nint count_up(int count) {\n  return count + 1;\n}\n";
    let file = Parsed::new(Lang::C, src.to_owned(), true).unwrap();
    let start = src.find("int count_up").unwrap();
    let mutants: Vec<String> = mutations(&file, start, src.len(), true)
        .into_iter()
        .map(|m| m.applied_to(src))
        .collect();
    assert!(
        mutants
            .iter()
            .any(|s| s.contains("return count_of(count) + 1;")),
        "{mutants:#?}"
    );
    assert!(!mutants.iter().any(|s| s.contains("count_up(count)")));
    // Nor is the name it declares mended into another's.
    assert!(
        !mutants
            .iter()
            .any(|s| s.matches("int count_of(").count() > 1),
        "{mutants:#?}"
    );
}

#[test]
fn reach_templates_unwrap_calls_negate_operands_and_mend_names() {
    let src = "from .util import finalize_tokens\n\ndef render(self, text, item, ok):\n    alt = escape(strip(text))\n    if isinstance(item, int) and ok:\n        return wraps(alt, item)\n    try:\n        check(alt)\n    except ValueError:\n        raise KeyError(alt)\n    return _finalize_tokens(alt.lower())\n";
    let with = mutants_of(Lang::Python, src, true);
    for expected in [
        // A call replaced by its argument, or a method call by its
        // receiver.
        "    alt = strip(text)\n",
        "    alt = escape(text)\n",
        "        return alt\n",
        "        return item\n",
        "_finalize_tokens(alt)",
        // One side of `and` negated.
        "if isinstance(item, int) and not ok:",
        "if not isinstance(item, int) and ok:",
        // A type the check missed.
        "isinstance(item, (int, slice))",
        // A name mistaken for a similar one of the file.
        "return finalize_tokens(alt.lower())",
        // The `try` that hid the error, unwrapped.
        "        return wraps(alt, item)\n    check(alt)\n    return _finalize",
    ] {
        assert!(
            with.iter().any(|s| s.contains(expected)),
            "no template with {expected:?}"
        );
    }
    assert!(with.iter().all(|s| Lang::Python.syntax_error(s).is_none()));
    // A string-valued call is no bound, and strings joined by `+`
    // take no other arithmetic; a count is a bound, and a comparison
    // with a string still swaps.
    assert!(!with.iter().any(|s| s.contains("escape(strip(text)) + 1")));
    let joined = mutants_of(
        Lang::Python,
        "def f(xs, s):\n    n = len(xs)\n    return '<' + s if s == 'a' else n\n",
        true,
    );
    assert!(!joined
        .iter()
        .any(|s| s.contains("'<' - s") || s.contains("'<' * s")));
    assert!(joined.iter().any(|s| s.contains("n = len(xs) + 1")));
    assert!(joined.iter().any(|s| s.contains("s != 'a'")));
    let chained = mutants_of(
        Lang::Python,
        "PREFIX = 'xn--'\n\ndef g(a, b):\n    c = PREFIX + b\n    return '<' + a + b\n",
        true,
    );
    assert!(
        !chained
            .iter()
            .any(|s| s.contains(" - ") || s.contains(" * ") || s.contains("not (")),
        "{chained:#?}"
    );
    // Definitions, parameters and imports keep their names.
    assert!(!with
        .iter()
        .any(|s| s.contains("from .util import _finalize")));
    let without = mutants_of(Lang::Python, src, false);
    assert!(!without.iter().any(|s| s.contains("alt = strip(text)")));
    assert!(!without.iter().any(|s| s.contains("(int, slice)")));
    // JavaScript: the same calls and operands in its syntax.
    let js = "function f(a, ok) {\n  const b = trim(pad(a));\n  if (a.length && ok) { return b.toLowerCase(); }\n  return paddd(b);\n}\nfunction padd(x) { return x; }\n";
    let with = mutants_of(Lang::JavaScript, js, true);
    for expected in [
        "const b = pad(a);",
        "if (a.length && !ok)",
        "if (!a.length && ok)",
        "return b; }",
        "return padd(b);",
    ] {
        assert!(
            with.iter().any(|s| s.contains(expected)),
            "no template with {expected:?} in {with:#?}"
        );
    }
}

#[test]
fn templates_apply_to_c_like_languages() {
    for (lang, src, expected) in [
        (
            Lang::JavaScript,
            "function f(a, n) { let i = n; if (a && i > 0) { i = n; } return i; }\n",
            "let i = n - 1;",
        ),
        (
            Lang::JavaScript,
            "function f(a, b) { if (a && b) { return 1; } return 0; }\n",
            "if (b)",
        ),
        (
            Lang::Rust,
            "fn f(n: i32, m: i32) -> bool { n < m }\n",
            "n < m + 1",
        ),
        (
            Lang::C,
            "int f(int n) { int x = 0; int y = 1; return x + y + n; }\n",
            "int y = 1; int x = 0;",
        ),
    ] {
        let m = mutants_of(lang, src, true);
        assert!(
            m.iter().any(|s| s.contains(expected)),
            "{lang:?}: no {expected:?} in {m:#?}"
        );
    }
}

#[test]
fn c_and_rust_get_guards_and_rust_saturating_subtraction() {
    for (lang, src, expected) in [
        (
            Lang::C,
            "int sum(int *xs, int n) {\n    int s = 0;\n    if (n > 99) return -1;\n    for (int i = 0; i < n; i++) s += xs[i];\n    return s;\n}\n",
            "    if (!xs) return -1;\n    int s = 0;",
        ),
        (
            Lang::C,
            "void fill(char *buf, int n) {\n    buf[n - 1] = 0;\n}\n",
            "    if (!buf) return;\n    buf[n - 1] = 0;",
        ),
        (
            Lang::Rust,
            "fn last(xs: &[i32]) -> Option<i32> {\n    if xs.len() > 5 {\n        return None;\n    }\n    Some(xs[xs.len() - 1])\n}\n",
            "    if xs.is_empty() {\n        return None;\n    }\n    if xs.len() > 5",
        ),
        (
            Lang::Rust,
            "fn gap(a: usize, b: usize) -> usize {\n    a - b\n}\n",
            "    a.saturating_sub(b)\n",
        ),
    ] {
        let m = mutants_of(lang, src, true);
        assert!(
            m.iter().any(|s| s.contains(expected)),
            "{lang:?}: no {expected:?} in {m:#?}"
        );
        assert!(m.iter().all(|s| lang.syntax_error(s).is_none()), "{lang:?}");
    }
    // A guard needs a value to return: none for a C function that
    // returns only computed values, and no saturation of floats.
    let c = mutants_of(Lang::C, "int twice(int n) {\n    return n * 2;\n}\n", true);
    assert!(!c.iter().any(|s| s.contains("if (!n)")), "{c:#?}");
    let f = mutants_of(Lang::Rust, "fn h(x: f64) -> f64 {\n    x - 1.0\n}\n", true);
    assert!(!f.iter().any(|s| s.contains("saturating_sub")));
    // Without templates, neither.
    let plain = mutants_of(
        Lang::Rust,
        "fn gap(a: usize, b: usize) -> usize {\n    a - b\n}\n",
        false,
    );
    assert!(!plain.iter().any(|s| s.contains("saturating_sub")));
}

#[test]
fn python_operators_constants_conditions_and_indexes() {
    let src = "def f(xs, n):\n    if n < 1:\n        return xs[n]\n    if n == 1 and isinstance(xs, list):\n        return 0\n    return n - 1\n";
    let m = mutants(Lang::Python, src);
    for expected in [
        "    if n <= 1:\n",
        "    if n >= 1:\n",
        "    if not (n == 1 and isinstance(xs, list)):\n",
        "        return xs[n + 1]\n",
        "    return n + 1\n",
        "    return n - 2\n",
    ] {
        assert!(
            m.iter().any(|s| s.contains(expected)),
            "no mutant with {expected:?}"
        );
    }
    assert!(m.iter().all(|s| Lang::Python.syntax_error(s).is_none()));
    // A single comparison is negated by swapping its operator only.
    assert!(!m.iter().any(|s| s.contains("not (n < 1)")), "{m:#?}");
}

#[test]
fn shape_templates_swap_operands_move_indexes_and_keep_running_maxima() {
    for (src, expected) in [
        (
            "def digits(n, b):\n    out = ''\n    while n:\n        out = out + str(n % b)\n        n //= b\n    return out\n",
            "        out = str(n % b) + out\n",
        ),
        (
            "def cost(g, i, j):\n    return g[i, j] + 1\n",
            "    return g[i, j - 1] + 1\n",
        ),
        (
            "def cost(g, i, j):\n    return g[i, j] + 1\n",
            "    return g[j, i] + 1\n",
        ),
        (
            "def peak(xs):\n    best = 0\n    for x in xs:\n        best = best + x\n    return best\n",
            "        best = max(0, best + x)\n",
        ),
        (
            "def longest(xs):\n    run = 0\n    for i, x in enumerate(xs):\n        run = i + 1\n    return run\n",
            "        run = max(run, i + 1)\n",
        ),
    ] {
        let m = mutants_of(Lang::Python, src, true);
        assert!(
            m.iter().any(|s| s.contains(expected)),
            "no mutant with {expected:?}: {m:#?}"
        );
        assert!(m.iter().all(|s| Lang::Python.syntax_error(s).is_none()));
        // Only with the templates.
        let plain = mutants_of(Lang::Python, src, false);
        assert!(!plain.iter().any(|s| s.contains(expected)), "{expected:?}");
    }
    // `+` on numbers is left in its order.
    let m = mutants_of(Lang::Python, "def f(a, b):\n    return a + b\n", true);
    assert!(!m.iter().any(|s| s.contains("return b + a")), "{m:#?}");
}

#[test]
fn shape_templates_mend_base_cases_loops_and_forgotten_statements() {
    for (src, expected) in [
        (
            "def parts(n):\n    if n == 0:\n        return []\n    return [n] + parts(n - 1)\n",
            "        return [[]]\n",
        ),
        (
            "def parts(n):\n    if n == 0:\n        return []\n    return [n] + parts(n - 1)\n",
            "        return [n]\n",
        ),
        (
            "def balanced(s):\n    depth = 0\n    for c in s:\n        depth += 1 if c == '(' else -1\n    return True\n",
            "    return depth == 0\n",
        ),
        (
            "def drain(q):\n    seen = []\n    while True:\n        seen.append(q.pop())\n    return seen\n",
            "    while q:\n",
        ),
        (
            "def unique(xs):\n    seen = set()\n    out = []\n    for x in xs:\n        if x not in seen:\n            out.append(x)\n    return out\n",
            "            out.append(x)\n            seen.add(x)\n",
        ),
        (
            "def chunks(s, n):\n    out = []\n    while len(s) > n:\n        out.append(s[:n])\n        s = s[n:]\n    return out\n",
            "        s = s[n:]\n    out.append(s)\n    return out\n",
        ),
        (
            "def flip(node):\n    prev = None\n    while node:\n        nxt = node.next\n        node.back = prev\n        node = nxt\n    return prev\n",
            "        prev = node\n        node = nxt\n",
        ),
        (
            "def second(n):\n    if n.next is None:\n        return None\n    return n.next.value\n",
            "    if n is None or n.next is None:\n",
        ),
    ] {
        let m = mutants_of(Lang::Python, src, true);
        assert!(
            m.iter().any(|s| s.contains(expected)),
            "no mutant with {expected:?}: {m:#?}"
        );
        assert!(
            m.iter().all(|s| Lang::Python.syntax_error(s).is_none()),
            "{m:#?}"
        );
    }
    // A collection that is filled gets no insertion; a variable the
    // loop moves gets none either.
    let m = mutants_of(
        Lang::Python,
        "def copy(xs):\n    out = []\n    for x in xs:\n        out.append(x)\n    return out\n",
        true,
    );
    assert!(
        !m.iter().any(|s| s.matches("out.append(x)").count() > 1),
        "{m:#?}"
    );
}

#[test]
fn compound_assignments_swap_their_operator() {
    for (lang, src, expected, plain) in [
        (
            Lang::Python,
            "def f(n):\n    while n:\n        n ^= n - 1\n    return n\n",
            "        n &= n - 1\n",
            "        n = n - 1\n",
        ),
        (
            Lang::JavaScript,
            "function f(n) {\n  let s = 0;\n  s += n;\n  return s;\n}\n",
            "  s -= n;\n",
            "  s = n;\n",
        ),
        (
            Lang::C,
            "int f(int n) {\n  int s = 0;\n  s += n;\n  return s;\n}\n",
            "  s -= n;\n",
            "  s = n;\n",
        ),
    ] {
        let m = mutants(lang, src);
        assert!(
            m.iter().any(|s| s.contains(expected)),
            "{lang:?}: no mutant with {expected:?}: {m:#?}"
        );
        // The assignment itself is never turned into a plain one.
        assert!(!m.iter().any(|s| s.contains(plain)), "{lang:?}: {m:#?}");
    }
}

#[test]
fn c_like_languages_share_the_operators() {
    for (lang, src, expected) in [
        (
            Lang::C,
            "int f(int a, int b) { return a > b ? a : b; }\n",
            "a >= b",
        ),
        (
            Lang::JavaScript,
            "function f(a, b) { if (a && b) { return 1; } return 0; }\n",
            "a || b",
        ),
        (
            Lang::Rust,
            "fn f(a: i32) -> i32 { if a == 0 { 1 } else { a * 2 } }\n",
            "a != 0",
        ),
        (
            Lang::Go,
            "package m\nfunc F(a int) int { return a + 3 }\n",
            "a - 3",
        ),
        (
            Lang::Java,
            "class A { int f(int[] a, int i) { return a[i]; } }\n",
            "a[i + 1]",
        ),
    ] {
        let m = mutants(lang, src);
        assert!(
            m.iter().any(|s| s.contains(expected)),
            "{lang:?}: no {expected:?} in {m:#?}"
        );
    }
}

#[test]
fn a_function_the_failing_tests_name_comes_first_among_ties() {
    let named = test_words(&[
        "tests/test_renderers.py::TestMarkdownRendererRoundTrip::test_link_title".to_owned(),
    ]);
    assert!(named.contains("markdown") && named.contains("link"));
    assert_eq!(affinity("MarkdownRenderer.link", &named), 1.0);
    assert!((affinity("HTMLRenderer.link", &named) - 2.0 / 3.0).abs() < 1e-9);
    assert_eq!(affinity("InlineParser.parse_emphasis", &named), 0.0);
    assert_eq!(affinity("_", &named), 0.0);
}

#[test]
fn test_ids_split_into_words_last_first() {
    assert_eq!(
        id_words("tests/test_calc.py::CalcTest::test_add"),
        ["test_add", "CalcTest", "test_calc", "tests"]
    );
    assert_eq!(id_words("tests.test_calc.CalcTest.test_add")[0], "test_add");
}

#[test]
fn templates_insert_the_return_or_break_the_code_implies() {
    // A total computed and never returned.
    let src = "def total(xs):\n    s = 0\n    for x in xs:\n        s += x\n";
    let with = mutants_of(Lang::Python, src, true);
    assert!(
        with.iter()
            .any(|m| m
                == "def total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n"),
        "{with:#?}"
    );
    // A match found and then overwritten by the next one.
    let src = "def first_negative(xs):\n    found = None\n    for x in xs:\n        if x < 0:\n            found = x\n    return found\n";
    let with = mutants_of(Lang::Python, src, true);
    assert!(
        with.iter()
            .any(|m| m.contains("            found = x\n            break\n    return found")),
        "{with:#?}"
    );
    // A function that returns at its end already gets no second return.
    assert!(!with
        .iter()
        .any(|m| m.contains("    return found\n    return")));
    let js = "function total(xs) {\n  let s = 0;\n  for (const x of xs) {\n    s += x;\n  }\n}\n";
    let with = mutants_of(Lang::JavaScript, js, true);
    assert!(
        with.iter()
            .any(|m| m.contains("    s += x;\n  }\n  return s;\n}")),
        "{with:#?}"
    );
    for m in &with {
        assert!(Lang::JavaScript.syntax_error(m).is_none(), "{m}");
    }
    // The mutate brancher alone makes none of them.
    assert!(!mutants(
        Lang::Python,
        "def total(xs):\n    s = 0\n    for x in xs:\n        s += x\n"
    )
    .iter()
    .any(|m| m.contains("return s")));
}
