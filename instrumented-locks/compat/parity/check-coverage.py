#!/usr/bin/env python3
"""Machine check of API parity: is every public item of parking_lot 0.12.5 exercised?

The item list is read from the sources of the real crates (parking_lot 0.12.5, lock_api 0.4.14,
parking_lot_core 0.9.12 for the `deadlock` module), not written by hand, so a name that the
parity tests forget is found, and so is a marker that names an item that does not exist.

Items, and how they are named in `// covers:` markers:

* `NAME`                  a name parking_lot exports at its root (`Mutex`, `const_mutex`,
                          `lock_api`, `ArcMutexGuard`, ...) or `deadlock::check_deadlock`;
* `ALIAS::method`         an inherent method or const of the lock_api type behind a parking_lot
                          alias (`FairMutex::try_lock_for`, `RwLockUpgradableReadGuard::upgrade`),
                          once per alias: a compat crate may implement `FairMutex` apart from
                          `Mutex`, so each alias is checked on its own;
* `ALIAS: Trait`          a trait implementation of that type (`MutexGuard: Display`);
* `RAW::item`             an item of a lock_api trait that a parking_lot raw type implements
                          (`RawRwLock::try_upgrade_for`, `RawThreadId::INIT`);
* `Type::method`, `Type: Trait`  parking_lot's own types (`Condvar`, `Once`, `OnceState`, ...);
  an enum variant is `OnceState::Poisoned`;
* `lock_api::NAME`        every public type and trait of lock_api (reachable as
                          `parking_lot::lock_api::NAME`), and `lock_api::Type::method` /
                          `lock_api::Type: Trait` for lock_api types parking_lot does not alias
                          (`RawReentrantMutex`, `GuardSend`, `GuardNoSend`);
* `DeadlockedThread::method`  what `check_deadlock()` returns (defined in parking_lot_core).

A marker is a line comment `// covers: ITEM, ITEM, ...` in a file under tests/. It covers its
items only if the code after it, up to the end of the enclosing function (or up to the next
marker, outside functions), uses them: a method's or a constant's name must appear as a word in
that code (comments removed), a trait implementation must show evidence of use (`{:?}` for
Debug, `Send` in a static assertion, ...; see EVIDENCE). Markers that name unknown items are
errors, and so are allow-list entries that name unknown items or items that are covered.

Every parking_lot cargo feature must be enabled by some feature set of the parity crate
(Cargo.toml), except those in FEATURE_ALLOW.

Exit status: 0 all covered; 1 something missing or wrong (listed); 2 sources not found.
Python 3 standard library only.
"""

import argparse
import glob
import os
import re
import sys

PARKING_LOT = "parking_lot-0.12.5"
LOCK_API = "lock_api-0.4.14"
PARKING_LOT_CORE = "parking_lot_core-0.9.12"

# Items that the tests cannot exercise, with the reason. Keep this short: each entry is a hole.
ALLOW = {
}

# parking_lot features the parity crate does not enable, with the reason.
FEATURE_ALLOW = {
    "default": "an empty list: nothing to enable",
    "nightly": "forwards to parking_lot_core/nightly and lock_api/nightly, which need a nightly "
    "toolchain; the project builds on stable (MSRV 1.87)",
}

# Evidence that a trait implementation is used: a regular expression searched in the code after
# the marker (comments removed, string literals kept, so format strings count). None: the
# marker suffices (Deref and Drop are used by every guard access and release).
EVIDENCE = {
    "Debug": r"\{:#?\?\}|\bDebug\b",
    "Display": r"\{\}|\bto_string\b|\bDisplay\b",
    "Default": r"\bdefault\b|\bDefault\b",
    "From": r"\bfrom\b|\binto\b|\bFrom\b",
    "Send": r"\bSend\b|\bspawn\b",
    "Sync": r"\bSync\b|\bspawn\b|\bwhile_held_elsewhere\b",
    "Serialize": r"\bto_string\b|\bto_vec\b|\bserialize\b|\bSerialize\b",
    "Deserialize": r"\bfrom_str\b|\bfrom_slice\b|\bdeserialize\b|\bDeserialize\b",
    "StableAddress": r"\bOwningRef\b|\bStableAddress\b",
    "Clone": r"\bclone\b|\bClone\b",
    "Copy": r"\bCopy\b",
    "PartialEq": r"==|!=|assert_eq!|assert_ne!|\bPartialEq\b",
    "Eq": r"\bEq\b",
    "Deref": None,
    "DerefMut": None,
    "Drop": None,
}


# ---------------------------------------------------------------------------------------------
# Rust source scanning (enough of Rust's lexical grammar for these three crates).


def blank_comments_and_strings(text, keep_strings=False):
    """Return `text` with comments (and, unless keep_strings, string and char literal contents)
    replaced by spaces; newlines and offsets are kept."""
    out = list(text)
    i, n = 0, len(text)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 8]) and (i == 0 or not text[i - 1].isalnum()):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + len(hashes) + 2)
            j = n if end < 0 else end + 1 + len(hashes)
            if not keep_strings:
                blank(i + 1, j - 1)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if not keep_strings:
                blank(i + 1, j)
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            m = re.match(r"'(\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'])'", text[i:])
            if m:
                if not keep_strings:
                    blank(i + 1, i + len(m.group(0)) - 1)
                i += len(m.group(0))
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def brace_depths(code):
    """depth[i]: how many braces are open just before code[i]; match[open] = close."""
    depth, match, stack, d = [0] * (len(code) + 1), {}, [], 0
    for i, c in enumerate(code):
        depth[i] = d
        if c == "{":
            stack.append(i)
            d += 1
        elif c == "}":
            d -= 1
            if stack:
                match[stack.pop()] = i
    depth[len(code)] = d
    return depth, match


def skip_angles(s, i):
    """s[i] == '<': return the index after the matching '>' ('->' is not a bracket)."""
    d = 0
    while i < len(s):
        if s.startswith("->", i):
            i += 2
            continue
        if s[i] == "<":
            d += 1
        elif s[i] == ">":
            d -= 1
            if d == 0:
                return i + 1
        i += 1
    return i


def last_segment(path):
    path = path.strip().lstrip("&").strip()
    path = re.sub(r"^(dyn|mut)\s+", "", path)
    base = path.split("<", 1)[0].strip()
    return base.split("::")[-1].strip().lstrip("?")


class Source:
    """One Rust file: its code with comments and strings blanked, and the brace structure."""

    def __init__(self, path):
        self.path = path
        with open(path, encoding="utf-8") as f:
            self.text = f.read()
        self.code = blank_comments_and_strings(self.text)
        self.depth, self.match = brace_depths(self.code)

    def header_and_body(self, start):
        """From an item keyword at `start`: (header text, body open index or None)."""
        i, d = start, 0
        while i < len(self.code):
            c = self.code[i]
            if self.code.startswith("->", i):
                i += 2
                continue
            if c == "<":
                d += 1
            elif c == ">":
                d -= 1
            elif c == "{" and d <= 0:
                return self.code[start:i], i
            elif c == ";" and d <= 0:
                return self.code[start:i], None
            i += 1
        return self.code[start:], None

    def impls(self, at_depth=0):
        """Yield (trait name or None, self type name, body open, body close) for each impl."""
        for m in re.finditer(r"\bimpl\b", self.code):
            if self.depth[m.start()] != at_depth:
                continue
            header, body = self.header_and_body(m.end())
            h = header.strip()
            if h.startswith("<"):
                h = h[skip_angles(h, 0):]
            h = re.split(r"\bwhere\b", h)[0]
            parts = split_top_level_for(h)
            if parts is None:
                trait, ty = None, last_segment(h)
            else:
                trait, ty = last_segment(parts[0]), last_segment(parts[1])
            close = self.match.get(body) if body is not None else None
            yield trait, ty, body, close

    def pub_members(self, body, close, in_trait=False):
        """Methods, consts and associated types declared directly in a block."""
        names = []
        if body is None or close is None:
            return names
        inner = self.code[body + 1:close]
        want = self.depth[body] + 1
        if in_trait:
            pat = r"\b(?:(?:unsafe\s+)?fn|const|type)\s+([A-Za-z_]\w*)"
        else:
            pat = r"\bpub\s+(?:const\s+)?(?:unsafe\s+)?(?:fn|const)\s+([A-Za-z_]\w*)"
        for m in re.finditer(pat, inner):
            if self.depth[body + 1 + m.start()] == want:
                names.append(m.group(1))
        return names

    def derives(self):
        """{type name: [derived traits]} for `#[derive(..)] pub struct/enum`."""
        out = {}
        for m in re.finditer(r"#\[derive\(([^)]*)\)\]\s*pub\s+(?:struct|enum)\s+(\w+)", self.code):
            out[m.group(2)] = [t.strip() for t in m.group(1).split(",") if t.strip()]
        return out


def split_top_level_for(h):
    """Split an impl header `Trait<..> for Type<..>` at its `for`; None if inherent."""
    d = 0
    i = 0
    while i < len(h):
        if h.startswith("->", i):
            i += 2
            continue
        c = h[i]
        if c == "<":
            d += 1
        elif c == ">":
            d -= 1
        elif d == 0 and re.match(r"\bfor\b", h[i:]) and (i == 0 or not (h[i - 1].isalnum() or h[i - 1] == "_")):
            return h[:i], h[i + 3:]
        i += 1
    return None


# ---------------------------------------------------------------------------------------------
# The public surface.


def find_crate(root_override, name):
    if root_override:
        return root_override
    cargo_home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    hits = sorted(glob.glob(os.path.join(cargo_home, "registry", "src", "*", name)))
    return hits[0] if hits else None


def lock_api_surface(root):
    """types, traits {name: [items]}, inherent {type: [members]}, trait impls {type: [traits]}."""
    types, traits, inherent, trait_impls = set(), {}, {}, {}
    for path in sorted(glob.glob(os.path.join(root, "src", "*.rs"))):
        src = Source(path)
        for m in re.finditer(r"\bpub\s+(struct|enum)\s+(\w+)", src.code):
            if src.depth[m.start()] == 0:
                types.add(m.group(2))
        for m in re.finditer(r"\bpub\s+(?:unsafe\s+)?trait\s+(\w+)", src.code):
            if src.depth[m.start()] == 0:
                _, body = src.header_and_body(m.end())
                traits[m.group(1)] = src.pub_members(body, src.match.get(body), in_trait=True)
        for trait, ty, body, close in src.impls():
            if trait is None:
                inherent.setdefault(ty, []).extend(src.pub_members(body, close))
            else:
                trait_impls.setdefault(ty, []).append(trait)
    return types, traits, inherent, trait_impls


def parking_lot_surface(root, lock_api, core_root):
    """Every item name (see the module docs), mapped to a short description of its origin."""
    types, traits, inherent, trait_impls = lock_api
    items = {}

    def add(name, origin):
        items.setdefault(name, origin)

    lib = Source(os.path.join(root, "src", "lib.rs"))
    aliases = {}  # parking_lot name -> lock_api type
    for m in re.finditer(r"\bpub\s+use\s+([^;]*);", lib.code):
        spec = m.group(1).strip()
        if "{" in spec:
            prefix, names = spec.split("{", 1)
            names = [n.strip() for n in names.rstrip("}").split(",") if n.strip()]
        else:
            prefix, names = spec, [spec.split("::")[-1]]
        for n in names:
            add(n, "parking_lot root re-export")
            if "lock_api::" in prefix and n in types:
                aliases[n] = n  # ArcMutexGuard & co.: lock_api's own type, re-exported.
    if re.search(r"\bpub\s+mod\s+deadlock\b", lib.code):
        dl = Source(os.path.join(root, "src", "deadlock.rs"))
        for m in re.finditer(r"\bpub\s+use\s+[\w:]*::(\w+)\s*;", dl.code):
            add("deadlock::" + m.group(1), "parking_lot::deadlock (feature deadlock_detection)")
        core = Source(os.path.join(core_root, "src", "parking_lot.rs"))
        for m in re.finditer(r"\bimpl\s+DeadlockedThread\s*\{", core.code):
            body = m.end() - 1
            for name in core.pub_members(body, core.match.get(body)):
                add("DeadlockedThread::" + name, "returned by deadlock::check_deadlock")

    for path in sorted(glob.glob(os.path.join(root, "src", "*.rs"))):
        src = Source(path)
        for m in re.finditer(r"\bpub\s+type\s+(\w+)\s*(?:<[^=]*>)?\s*=\s*lock_api::(\w+)", src.code):
            aliases[m.group(1)] = m.group(2)
        own = set()
        for m in re.finditer(r"\bpub\s+(struct|enum)\s+(\w+)", src.code):
            if src.depth[m.start()] == 0:
                own.add(m.group(2))
                if m.group(1) == "enum":
                    _, body = src.header_and_body(m.end())
                    inner = src.code[body + 1:src.match[body]]
                    for v in inner.split(","):
                        v = re.sub(r"#\[[^\]]*\]", "", v).strip()
                        if re.match(r"^[A-Z]\w*$", v):
                            add(m.group(2) + "::" + v, "enum variant")
        for ty, derived in src.derives().items():
            for t in derived:
                add("%s: %s" % (ty, t), "derive")
        for trait, ty, body, close in src.impls():
            if ty not in own:
                continue
            if trait is None:
                for name in src.pub_members(body, close):
                    add("%s::%s" % (ty, name), "inherent")
            elif trait in traits:
                for name in traits[trait]:
                    add("%s::%s" % (ty, name), "via lock_api::" + trait)
            else:
                add("%s: %s" % (ty, trait), "trait impl")

    for alias, target in aliases.items():
        for name in inherent.get(target, []):
            add("%s::%s" % (alias, name), "lock_api::%s inherent" % target)
        for t in trait_impls.get(target, []):
            add("%s: %s" % (alias, t), "lock_api::%s trait impl" % target)

    aliased = set(aliases.values())
    for t in sorted(types) + sorted(traits):
        add("lock_api::" + t, "lock_api public item")
    for t in sorted(types - aliased):
        for name in inherent.get(t, []):
            add("lock_api::%s::%s" % (t, name), "lock_api inherent (not aliased by parking_lot)")
        for tr in trait_impls.get(t, []):
            add("lock_api::%s: %s" % (t, tr), "lock_api trait impl (not aliased by parking_lot)")
    return items


def features(root):
    with open(os.path.join(root, "Cargo.toml"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^\[features\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    return re.findall(r"^([A-Za-z0-9_-]+)\s*=", m.group(1), re.M) if m else []


# ---------------------------------------------------------------------------------------------
# The parity tests' markers.


def markers(test_dir):
    """Yield (file, line, item, scope code with comments removed and strings kept).

    Consecutive marker lines form one group. Inside a function, a group's scope runs from its
    last line to the end of the innermost enclosing function; outside functions, up to the
    next group (or the end of the file).
    """
    for path in sorted(glob.glob(os.path.join(test_dir, "**", "*.rs"), recursive=True)):
        src = Source(path)
        evidence_code = blank_comments_and_strings(src.text, keep_strings=True)
        lines = src.text.split("\n")
        offsets = [0]
        for ln in lines:
            offsets.append(offsets[-1] + len(ln) + 1)
        groups = []  # [(first line index, last line index, [(line index, spec)])]
        for i, ln in enumerate(lines):
            m = re.match(r"\s*//\s*covers:\s*(.*)$", ln)
            if not m:
                continue
            if groups and groups[-1][1] == i - 1:
                groups[-1][1] = i
                groups[-1][2].append((i, m.group(1)))
            else:
                groups.append([i, i, [(i, m.group(1))]])
        for k, (first, last, specs) in enumerate(groups):
            pos = offsets[first]
            start = offsets[last + 1] if last + 1 < len(offsets) else len(src.text)
            best = None
            for open_, close in src.match.items():
                if open_ < pos < close and (best is None or open_ > best[0]):
                    head_start = max(src.code.rfind(";", 0, open_), src.code.rfind("}", 0, open_),
                                     src.code.rfind("{", 0, open_))
                    if re.search(r"\bfn\b", src.code[head_start + 1:open_]):
                        best = (open_, close)
            if best is not None:
                end = best[1]
            else:
                end = offsets[groups[k + 1][0]] if k + 1 < len(groups) else len(src.text)
            scope = evidence_code[start:end]
            for line_index, spec in specs:
                for item in re.split(r"[,;]", spec):
                    item = item.strip()
                    if item:
                        yield path, line_index + 1, item, scope


def evidence_ok(item, scope):
    if ": " in item:
        trait = item.split(": ", 1)[1]
        pat = EVIDENCE.get(trait, r"\b%s\b" % re.escape(trait))
        return pat is None or re.search(pat, scope) is not None
    name = item.split("::")[-1]
    if item.startswith("lock_api::") and not re.search(r"\block_api\b", scope):
        return False  # reached through `parking_lot::lock_api`: the path must show it.
    return re.search(r"(?<![\w])%s(?![\w])" % re.escape(name), scope) is not None


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parking-lot", help="parking_lot 0.12.5 source directory")
    ap.add_argument("--lock-api", help="lock_api 0.4.14 source directory")
    ap.add_argument("--parking-lot-core", help="parking_lot_core 0.9.12 source directory")
    ap.add_argument("--tests", default=os.path.join(here, "tests"), help="parity test directory")
    ap.add_argument("--list", action="store_true", help="print every item and where it is covered")
    args = ap.parse_args()

    roots = {}
    for key, name in (("parking_lot", PARKING_LOT), ("lock_api", LOCK_API),
                      ("parking_lot_core", PARKING_LOT_CORE)):
        roots[key] = find_crate(getattr(args, key), name)
        if not roots[key] or not os.path.isdir(os.path.join(roots[key], "src")):
            print("check-coverage: sources of %s not found under $CARGO_HOME/registry/src; run\n"
                  "  cargo fetch --manifest-path %s\nwith the real parking_lot (no patch), or pass "
                  "--%s DIR" % (name, os.path.join(here, "Cargo.toml"), key.replace("_", "-")),
                  file=sys.stderr)
            return 2

    la = lock_api_surface(roots["lock_api"])
    items = parking_lot_surface(roots["parking_lot"], la, roots["parking_lot_core"])

    covered, problems = {}, []
    for path, line, item, scope in markers(args.tests):
        where = "%s:%d" % (os.path.relpath(path, here), line)
        if item not in items:
            problems.append("%s: marker names `%s`, which is not a public item" % (where, item))
        elif not evidence_ok(item, scope):
            problems.append("%s: marker `%s` but the code after it does not use it" % (where, item))
        else:
            covered.setdefault(item, []).append(where)

    for item, reason in ALLOW.items():
        if item not in items:
            problems.append("allow-list names `%s`, which is not a public item" % item)
        elif item in covered:
            problems.append("allow-list names `%s`, which is covered at %s: remove the entry"
                            % (item, covered[item][0]))

    missing = sorted(i for i in items if i not in covered and i not in ALLOW)

    with open(os.path.join(here, "Cargo.toml"), encoding="utf-8") as f:
        manifest = f.read()
    dep = re.search(r"^parking_lot\s*=\s*\{[^}]*features\s*=\s*\[([^\]]*)\]", manifest, re.M)
    enabled = set(re.findall(r'"([^"]+)"', dep.group(1))) if dep else set()
    enabled |= set(re.findall(r'"parking_lot/([^"]+)"', manifest))
    for feat in features(roots["parking_lot"]):
        if feat not in enabled and feat not in FEATURE_ALLOW:
            problems.append("parking_lot feature `%s` is enabled by no feature set" % feat)

    if args.list:
        for item in sorted(items):
            state = ", ".join(covered[item]) if item in covered else (
                "ALLOWED: " + ALLOW[item] if item in ALLOW else "MISSING")
            print("%-55s %s" % (item, state))

    print("check-coverage: %d public items of %s (with %s); %d covered, %d allowed, %d missing"
          % (len(items), PARKING_LOT, LOCK_API, len(covered), len(ALLOW), len(missing)))
    for p in problems:
        print("  error: " + p)
    if missing:
        print("  not exercised by any test:")
        for item in missing:
            print("    %-55s (%s)" % (item, items[item]))
    return 1 if missing or problems else 0


if __name__ == "__main__":
    sys.exit(main())
