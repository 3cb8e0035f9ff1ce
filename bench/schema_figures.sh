#!/usr/bin/env bash
# The figures issue 62 ("one settings schema for every job, and rooms whose boundaries are
# true in the code") asks for, before and after, measured on a source tree:
#
#   bench/schema_figures.sh [TREE]      (TREE: default, the repository this script is in)
#
# It reads files as text (in a git checkout: the files git tracks and the untracked ones it
# does not ignore; elsewhere every file, build*/ and dist/ left out), builds nothing and
# runs nothing but grep-like passes and, where it is on PATH, the `duplicates` tool.
# At be5c3bf (the issue's baseline) the issue gave 166 / 5 / 12,13,13 / 7 / 7,555 lines,
# 27 % / 17 (and run_search 122 lines); the definitions below give those numbers there,
# but for the budget's 13 (see 3).
#
# The product: the C++ sources and headers (.cpp .h .hxx .hpp .cc .cu .cuh) of the rooms,
# the top-level folders other than tests bench fuzz docs examples scripts cmake models dist
# sample-output build*, with python/ counted as its room python/src (its C++); for figure 3
# also the Python modules of python/ outside python/tests.
#
#  1 decl     lines in apps/*.cpp apps/*.h naming TCLAP::ValueArg, TCLAP::SwitchArg or
#             TCLAP::MultiArg (the issue's "declarations"; 166 at be5c3bf). Of them
#             "from rows": the generic constructions from a schema's rows (make_unique<...>,
#             static_cast<...>), the rest typed by hand.
#  2 to_args  definitions of functions named to_arguments in the product (5 at be5c3bf);
#             hand-written: the body spells an option ("--name") itself. One that is
#             base::arguments(...) (plus another to_arguments) is the generic one. Other
#             *_arguments helpers that spell options are listed beside.
#  3 names    product files (so not tests/) outside registration/ whose text, comments
#             included, contains learning_rate (12 at be5c3bf), budget, atlases (13). The
#             issue's 13 for the budget is not reproduced: "budget" gives 19 there (search/
#             and qc/ name the forward-time budget_ms too), the setting's own name
#             budget_minutes|budget-minutes 5; both are printed.
#  4 parsers  hand-written enum parsers (7 at be5c3bf): free functions parse_* of one
#             string whose body compares it (==, != with a literal, to_string(...) or
#             *_name(...)) and does not go through a name table (kXxxNames.parse /
#             .contains); parsers of "a keyword or a number" (strtod ...) and those
#             returning a library type (at::Device: the device check) are not enum parsers.
#  5 rooms    lines (all lines, blank and comment included) of the product's C++ per room;
#             pipeline/ 7,555 = 27 % at be5c3bf. Two views: pipeline one room, and
#             pipeline/pair and pipeline/runs two. Goal: no room over 20 %.
#  6 long     functions of 100 lines or more in the product's C++ (a brace-matching
#             scan: from the signature's first line to the closing brace), listed.
#  7 dups     `duplicates --most 200` over the whole tree: pairs, those marked boilerplate,
#             and the rest (17 at be5c3bf).
#  8 tclap    per apps/ file: lines naming ValueArg/SwitchArg/MultiArg, and all TCLAP:: lines.
#  9 arrows   #include lines that run back up the rooms' order (pair -> runs or another room
#             design.md's table does not give it, as parallel/; a room below
#             pipeline/ including pair, runs or pipeline; one of registration's four rooms
#             including a later one), and include loops among pipeline/pair's and
#             pipeline/runs' headers (a stand-in for the farm-studio arrows, a tool not here).
set -euo pipefail

tree=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
tree=$(cd "$tree" && pwd)

exec python3 - "$tree" <<'PY'
import os, re, subprocess, sys, shutil

root = sys.argv[1]
CXX = ('.cpp', '.h', '.hxx', '.hpp', '.cc', '.cu', '.cuh')
NOT_ROOMS = {'tests', 'bench', 'fuzz', 'docs', 'examples', 'scripts', 'cmake', 'models', 'dist',
             'sample-output', '.git', '.github', '.gl', '.whl', '.device', 'shared'}


def tree_files():
    try:
        top = subprocess.run(['git', '-C', root, 'rev-parse', '--show-toplevel'], capture_output=True,
                             text=True, check=True).stdout.strip()
        if os.path.realpath(top) == os.path.realpath(root):
            out = subprocess.run(['git', '-C', root, 'ls-files', '-co', '--exclude-standard', '-z'],
                                 capture_output=True, check=True).stdout.decode()
            return sorted({p for p in out.split('\0') if p and os.path.isfile(os.path.join(root, p))})
    except (subprocess.CalledProcessError, FileNotFoundError):
        pass
    files = []
    for d, ds, fs in os.walk(root):
        rel = os.path.relpath(d, root)
        ds[:] = [x for x in ds if not (rel == '.' and (x.startswith('build') or x in ('dist', '.git')))
                 and x != '__pycache__']
        files += [os.path.normpath(os.path.join(rel, f)) for f in fs]
    return sorted(files)


FILES = tree_files()
TEXT = {}


def text(p):
    if p not in TEXT:
        with open(os.path.join(root, p), encoding='utf-8', errors='replace') as f:
            TEXT[p] = f.read()
    return TEXT[p]


def room_of(p, split_pipeline=False):
    parts = p.split('/')
    if len(parts) < 2 or parts[0] in NOT_ROOMS or parts[0].startswith('build'):
        return None
    if parts[0] == 'python':
        return 'python/src' if parts[1] == 'src' else None
    if split_pipeline and parts[0] == 'pipeline' and len(parts) > 2:
        return 'pipeline/' + parts[1]
    return parts[0]


PRODUCT_CXX = [p for p in FILES if p.endswith(CXX) and room_of(p)]
PRODUCT_PY = [p for p in FILES if p.startswith('python/') and p.endswith('.py')
              and not p.startswith('python/tests/')]
APPS = [p for p in FILES if re.fullmatch(r'apps/[^/]+\.(cpp|h)', p)]

# ---- a C++ scan: comments out (strings kept in `code`, blanked in `scan`), functions found
def clean(t):
    code, scan = list(t), list(t)
    i, n = 0, len(t)
    line_start = True
    while i < n:
        c = t[i]
        if line_start and c in ' \t':
            i += 1
            continue
        if line_start and c == '#':  # a preprocessor line, with its continuations
            j = i
            while j < n and not (t[j] == '\n' and t[j - 1] != '\\'):
                j += 1
            for k in range(i, j):
                if t[k] != '\n':
                    code[k] = scan[k] = ' '
            i = j
            continue
        line_start = c == '\n'
        if t.startswith('//', i):
            j = t.find('\n', i)
            j = n if j < 0 else j
            for k in range(i, j):
                code[k] = scan[k] = ' '
            i = j
        elif t.startswith('/*', i):
            j = t.find('*/', i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if t[k] != '\n':
                    code[k] = scan[k] = ' '
            i = j
        elif c == 'R' and t.startswith('R"', i) and (i == 0 or not (t[i - 1].isalnum() or t[i - 1] == '_')):
            m = re.match(r'R"([^(\s]*)\(', t[i:])
            if not m:
                i += 1
                continue
            end = t.find(')' + m.group(1) + '"', i)
            end = n if end < 0 else end + len(m.group(1)) + 2
            for k in range(i + 2, end - 1):
                if t[k] != '\n':
                    scan[k] = ' '
            i = end
        elif c == '"' or (c == "'" and not (i > 0 and t[i - 1].isalnum() and i + 1 < n and t[i + 1].isalnum())):
            j = i + 1
            while j < n and t[j] != c and t[j] != '\n':
                j += 2 if t[j] == '\\' else 1
            for k in range(i + 1, min(j, n)):
                scan[k] = ' '
            i = j + 1
        else:
            i += 1
    return ''.join(code), ''.join(scan)


def top_level_paren(h):
    """Index of the first '(' at depth 0 of <> [] in h, and of its matching ')'."""
    depth = 0
    for i, c in enumerate(h):
        if c == '(':
            d = 0
            for j in range(i, len(h)):
                d += {'(': 1, ')': -1}.get(h[j], 0)
                if d == 0:
                    return i, j
            return i, -1
    return -1, -1


def strip_template(h):
    """h without its leading template <...> lists (blanked, so offsets stay)."""
    while True:
        m = re.match(r'\s*template\s*<', h)
        if not m:
            return h
        depth, j = 0, m.end() - 1
        for j in range(m.end() - 1, len(h)):
            depth += {'<': 1, '>': -1}.get(h[j], 0)
            if depth == 0:
                break
        h = ' ' * (j + 1) + h[j + 1:]


NAME_RE = re.compile(r'(operator\s*(?:\(\)|[^\s(]+)|~?[A-Za-z_]\w*(?:\s*::\s*~?[A-Za-z_]\w*)*)\s*$')


def functions(p):
    """[(name, first line, last line, header, body code)] of the functions defined in p."""
    if p in FUNCS:
        return FUNCS[p]
    code, scan = clean(text(p))
    line_of = [0] * (len(scan) + 1)
    ln = 1
    for i, c in enumerate(scan):
        line_of[i] = ln
        if c == '\n':
            ln += 1
    line_of[len(scan)] = ln
    out, stack, hs = [], [], 0  # stack: [kind, start, name, header start]
    for i, c in enumerate(scan):
        top = stack[-1][0] if stack else 'ns'
        outer = top in ('ns', 'class')
        if c == ';' and outer:
            hs = i + 1
        elif c == '{':
            if not outer:
                stack.append(['inner', i, None, None])
                continue
            h = scan[hs:i]
            m = None
            for m in re.finditer(r'\b(public|private|protected)\s*:(?!:)', h):
                pass
            cut = m.end() if m else 0
            h0 = hs + cut + (len(h[cut:]) - len(h[cut:].lstrip()))
            h = scan[h0:i]
            kind, name = 'other', None
            h = strip_template(h)
            h = re.sub(r'__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)|\[\[[^\]]*\]\]', lambda m: ' ' * len(m.group()), h)
            lp, rp = top_level_paren(h)
            if re.search(r'\bnamespace\b', h) or re.fullmatch(r'extern\s*"[^"]*"\s*', code[h0:i]):
                kind = 'ns'
            elif h.count('(') != h.count(')'):
                kind = 'initbrace'  # a brace inside parentheses (a default argument, a call's argument)
            elif re.search(r'\b(class|struct|union|enum)\b', h[:lp] if lp >= 0 else h) and not re.search(r'=\s*\[', h):
                kind = 'class'
            elif re.search(r'(?<![=!<>+\-*/%&|^])=(?!=)[^=]*\[[^\]]*\]', h) and not re.search(r'\boperator\b', h):
                name_m = re.search(r'([A-Za-z_]\w*)\s*(?:\{[^}]*\})?\s*=', h)
                kind, name = 'func', (name_m.group(1) if name_m else '<lambda>')
            elif lp >= 0 and rp >= 0 and not re.search(r'(?<![=!<>])=(?!=)', h[:lp]):
                rest = h[rp + 1:]
                if re.search(r'(?<!:):(?!:)', rest) and re.search(r'[\w>]\s*$', rest):
                    kind = 'initbrace'  # a member's brace initialiser in a constructor's list: the header goes on
                else:
                    nm = NAME_RE.search(h[:lp])
                    kind, name = 'func', (re.sub(r'\s+', '', nm.group(1)) if nm else '?')
            stack.append([kind, i, name, h0])
            if kind in ('ns', 'class'):
                hs = i + 1
        elif c == '}' and stack:
            kind, start, name, h0 = stack.pop()
            if kind == 'func':
                out.append((name, line_of[h0], line_of[i], code[h0:start], code[start:i + 1]))
            if kind != 'initbrace' and (not stack or stack[-1][0] in ('ns', 'class')):
                hs = i + 1
    FUNCS[p] = out
    return out


FUNCS = {}


def pct(a, b):
    return f'{100.0 * a / b:.1f} %' if b else '-'


rows = []  # (figure, value, detail)

# ---- 1 and 8: TCLAP declarations in apps/
ARG = re.compile(r'TCLAP::(ValueArg|SwitchArg|MultiArg)\b')
decl, generic, per_file = 0, 0, []
for p in APPS:
    lines = text(p).splitlines()
    d = [l for l in lines if ARG.search(l)]
    g = [l for l in d if re.search(r'make_unique<\s*TCLAP::|_cast<\s*(const\s+)?TCLAP::', l)]
    decl += len(d)
    generic += len(g)
    every = sum(1 for l in lines if 'TCLAP::' in l)
    if d or every:
        per_file.append((len(d), every, p[len('apps/'):]))
rows.append(('1 ValueArg/SwitchArg/MultiArg lines in apps/', str(decl),
             f'{decl - generic} by hand, {generic} built from schema rows'))

# ---- 2: to_arguments
to_args, hand_to, helpers = [], [], []
for p in PRODUCT_CXX:
    for name, a, b, head, body in functions(p):
        last = name.split('::')[-1]
        spells = re.search(r'"--[A-Za-z]', body)
        if last == 'to_arguments':
            to_args.append(f'{p}:{a}')
            if spells:
                hand_to.append(f'{p}:{a}')
        elif last.endswith('_arguments') and spells:
            helpers.append(f'{last} {p}:{a}')
rows.append(('2 to_arguments written by hand', str(len(hand_to)),
             f'of {len(to_args)} definitions' + (': ' + ', '.join(hand_to) if hand_to else '')))
if helpers:
    rows.append(('  helpers spelling options', str(len(helpers)), ', '.join(helpers)))

# ---- 3: files naming the settings outside registration/ (and tests)
named = [p for p in PRODUCT_CXX + PRODUCT_PY if room_of(p) != 'registration']
for label, pat in (('learning_rate', r'learning_rate'), ('budget', r'budget'),
                   ('budget_minutes|budget-minutes', r'budget[_-]minutes'), ('atlases', r'atlases')):
    hits = [p for p in named if re.search(pat, text(p))]
    rows.append((f'3 files naming {label}', str(len(hits)),
                 ' '.join(hits) if len(hits) <= 6 else f'{len(hits)} files'))

# ---- 4: hand-written enum parsers
NUMBER = re.compile(r'\b(strto[a-z]+|sto[a-z]+|from_chars|istringstream|stringstream)\b')
hand_parsers, table_parsers, not_enum = [], [], []
for p in PRODUCT_CXX:
    for name, a, b, head, body in functions(p):
        last = name.split('::')[-1]
        if not last.startswith('parse_') or '::' in name.replace('autoreg::', ''):
            continue
        lp, rp = top_level_paren(head)
        params = head[lp + 1:rp] if lp >= 0 else ''
        ret = re.sub(r'\b(inline|static|constexpr|template\s*<[^>]*>)\s*', '', head[:lp]).strip()
        ret = ret[:ret.rfind(last)].strip() if last in ret else ret
        if params.count(',') or not re.search(r'string(_view)?\b', params):
            continue
        compares = re.search(r'[=!]=\s*"|"\s*[=!]=|[=!]=\s*(\w+::)*(to_string|\w+_name)\s*\(', body)
        tabled = re.search(r'\.(parse|contains)\s*[<(]', body)
        where = f'{last} {p}:{a}'
        if re.match(r'(std|at|c10)::|(bool|double|float|int|unsigned|long|size_t|u?int\d+_t)\b', ret) \
                or NUMBER.search(body):
            if compares:
                not_enum.append(where)
        elif compares and not tabled:
            hand_parsers.append(where)
        elif tabled:
            table_parsers.append(where)
rows.append(('4 enum parsers written by hand', str(len(hand_parsers)),
             ', '.join(hand_parsers) if hand_parsers else f'{len(table_parsers)} parse_* through a name table'))
if not_enum:
    rows.append(('  (string compares, not enums)', str(len(not_enum)), ', '.join(not_enum)))

# ---- 5: lines per room
def room_lines(split):
    lines = {}
    for p in PRODUCT_CXX:
        r = room_of(p, split)
        lines[r] = lines.get(r, 0) + text(p).count('\n') + (0 if text(p).endswith('\n') or not text(p) else 1)
    return lines


one, two = room_lines(False), room_lines(True)
total = sum(one.values())
big1 = max(one, key=one.get)
big2 = max(two, key=two.get)
rows.append(('5 product C++ lines', f'{total:,}', f'{len(PRODUCT_CXX)} files, {len(one)} rooms'))
rows.append(('  pipeline/ lines', f'{one.get("pipeline", 0):,}', pct(one.get('pipeline', 0), total) + ' of the product'))
rows.append(('  largest room (pipeline one room)', big1, f'{one[big1]:,} lines, {pct(one[big1], total)}'))
rows.append(('  largest room (pair, runs apart)', big2, f'{two[big2]:,} lines, {pct(two[big2], total)}'))
over = [r for r in two if two[r] > 0.2 * total]
rows.append(('  rooms over 20 % (pair, runs apart)', str(len(over)), ' '.join(over)))

# ---- 6: functions of 100 lines or more
long_ = sorted(((b - a + 1, p, a, name) for p in PRODUCT_CXX for name, a, b, _, _ in functions(p)
                if b - a + 1 >= 100), reverse=True)
rows.append(('6 functions of >= 100 lines', str(len(long_)),
             f'longest {long_[0][0]} ({long_[0][3]})' if long_ else ''))

# ---- 7: duplicates
dup = shutil.which('duplicates')
if dup:
    res = subprocess.run([dup, '--repo', root, '--most', '200', '--seconds', '120'],
                         capture_output=True, text=True, cwd=root)
    first = (res.stdout.splitlines() or [''])[0]
    m = re.match(r'(\d+) pairs? of places', first)
    pairs = int(m.group(1)) if m else 0
    bm = re.search(r'(\d+) of those marked boilerplate', first)
    boiler = int(bm.group(1)) if bm else 0
    body = [l for l in res.stdout.splitlines() if re.match(r'D\d+ ', l)]
    real = [l for l in body if not re.search(r'\bboilerplate\b', l)]
    in_product = [l for l in real if any(room_of(s.split(':')[0]) for s in l.split()[1:4:2])]
    incomplete = [l for l in res.stdout.splitlines() if l.startswith('incomplete:')]
    rows.append(('7 duplicates pairs, not boilerplate', str(pairs - boiler),
                 f'{pairs} pairs, {boiler} boilerplate; {len(in_product)} of the rest touch the product'
                 + ('; ' + incomplete[0] if incomplete else '')))
else:
    rows.append(('7 duplicates pairs, not boilerplate', '?', 'the duplicates tool is not on PATH'))

# ---- 9: include arrows that run back up, and include loops among pipeline's headers
INCLUDE = re.compile(r'#include "(?:autoreg/)?([a-z_]+/)?([a-z_]+)\.h"')
def includes(path):
    return [(m.group(1) or '', m.group(2)) for m in INCLUDE.finditer(text(path))]
def sources(folder):
    out = []
    for d, _, names in os.walk(os.path.join(root, folder)):
        out += [os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith(('.h', '.cpp', '.hxx'))]
    return sorted(out)
up = []
PAIR_USES = {'', 'pair/', 'io/', 'rt/', 'registration/', 'qc/', 'base/'}  # docs/design.md's table
for p in sources('pipeline/pair'):  # pair is below runs, and uses only the rooms its row names
    up += [f'{p} -> {r}{h}' for r, h in includes(p) if r not in PAIR_USES]
for room in ('base', 'ops', 'io', 'registration', 'search', 'segmentation', 'qc', 'rt', 'parallel'):
    for p in sources(room):  # the rooms below pipeline/
        up += [f'{p} -> {r}{h}' for r, h in includes(p) if r in ('pair/', 'runs/', 'pipeline/')]
uses = {'losses': set(), 'classical': {'losses'}, 'networks': set(), 'training': {'losses', 'networks'}}
home = {}
for sub in uses:
    for p in sources(f'registration/{sub}/include'):
        home[os.path.basename(p)[:-2]] = sub
for sub in uses:  # registration's four rooms, each using only those listed before it
    for p in sources(f'registration/{sub}'):
        up += [f'{p} -> registration/{h}' for r, h in includes(p)
               if r == 'registration/' and home.get(h, sub) not in uses[sub] | {sub}]
graph = {}
for room, prefix in (('pipeline/pair', 'pair/'), ('pipeline/runs', 'runs/')):
    for p in sources(room):
        if not p.endswith('.h') or '/autoreg/pipeline/' in p:  # not the forwarding headers
            continue
        here = os.path.dirname(p)
        deps = set()
        for r, h in includes(p):
            if r in ('pair/', 'runs/'):
                deps.add(r + h)
            elif not r and os.path.exists(os.path.join(root, here, h + '.h')):
                deps.add(prefix + h)
        graph[prefix + os.path.basename(p)[:-2]] = deps
loops = set()
def walk(node, path):
    for nxt in graph.get(node, ()):
        if nxt in path:
            loop = path[path.index(nxt):]
            i = loop.index(min(loop))
            loops.add(' -> '.join(loop[i:] + loop[:i]))
        elif len(path) < 12:
            walk(nxt, path + [nxt])
for n in graph:
    walk(n, [n])
rows.append(('9 include arrows back up', str(len(up)), '; '.join(up[:4]) + (' …' if len(up) > 4 else '')))
rows.append(('  include loops among pipeline headers', str(len(loops)), '; '.join(sorted(loops))))

# ---- print
print(f'issue 62 figures for {root}')
try:
    head = subprocess.run(['git', '-C', root, 'log', '-1', '--format=%h %cs'], capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(['git', '-C', root, 'status', '--porcelain'], capture_output=True,
                           text=True).stdout.strip()
    if head and os.path.exists(os.path.join(root, '.git')):
        print(f'  git HEAD {head}' + (' + uncommitted changes' if dirty else ''))
except FileNotFoundError:
    pass
w = max(len(r[0]) for r in rows)
for name, value, detail in rows:
    print(f'{name:<{w}}  {value:>7}  {detail}')
print('8 TCLAP per apps/ file (Arg lines / all TCLAP:: lines): '
      + ', '.join(f'{f} {d}/{e}' for d, e, f in sorted(per_file, key=lambda x: (-x[0], -x[1], x[2]))))
print('5 lines per room: ' + ', '.join(f'{r} {n:,} ({pct(n, total)})'
                                       for r, n in sorted(one.items(), key=lambda x: -x[1])))
print('  pipeline apart:  ' + ', '.join(f'{r} {n:,} ({pct(n, total)})'
                                       for r, n in sorted(two.items(), key=lambda x: -x[1]) if r.startswith('pipeline')))
print('6 functions of >= 100 lines:')
for n, p, a, name in long_:
    print(f'  {n:4d}  {p}:{a}  {name}')
PY
