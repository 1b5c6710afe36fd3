#!/usr/bin/env python3
"""Layers only look down: every #include "..." under lib/, apps/ and
python/src/ names a header of the including file's own layer or of a layer
below it, in the order lib/layers.txt gives. Prints each forbidden edge as
file:line: including-layer -> included-layer ("header") and exits 1.

Usage: include_layers.py SOURCE_ROOT
       include_layers.py --self-test   (the check on a made-up tree that breaks it)
"""

import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE_SUFFIXES = ('.h', '.cc', '.c', '.cpp')


def read_layers(path):
    """(ordered layer names, public header -> layer); errors name the line."""
    layers, owner = [], {}
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            words = line.split('#', 1)[0].split()
            if not words:
                continue
            layer, headers = words[0], words[1:]
            if layer in layers:
                sys.exit(f'{path}:{n}: layer {layer} listed twice')
            layers.append(layer)
            for h in headers:
                if h in owner:
                    sys.exit(f'{path}:{n}: public header {h} already belongs to {owner[h]}')
                owner[h] = layer
    return layers, owner


def layer_of_file(rel, layers, owner):
    """The layer a source file (path relative to the root) belongs to."""
    parts = rel.split('/')
    if parts[0] == 'lib' and len(parts) >= 3:
        if parts[1] == 'etpack':
            return owner.get(parts[2])
        return parts[1] if parts[1] in layers else None
    for layer in layers:
        if rel.startswith(layer + '/'):
            return layer
    return None


def layer_of_include(target, own, layers, owner):
    """The layer an include names; None for a generated header."""
    if '/' not in target:
        if target.endswith('_generated.h') or target == 'etpack_version.h':
            return None
        return own  # beside the including file
    folder, rest = target.split('/', 1)
    if folder == 'etpack':
        return owner.get(rest, '?etpack/' + rest)
    return folder if folder in layers else '?' + folder


def check(root):
    """(layers, the forbidden edges and unplaced files under `root`)."""
    layers, owner = read_layers(os.path.join(root, 'lib', 'layers.txt'))
    rank = {layer: i for i, layer in enumerate(layers)}
    errors = []
    public = os.path.join(root, 'lib', 'etpack')
    present = {name for name in os.listdir(public) if name.endswith('.h')}
    for name in sorted(present - owner.keys()):
        errors.append(f'lib/etpack/{name}: public header in no layer of lib/layers.txt')
    for name in sorted(owner.keys() - present):
        errors.append(f'lib/layers.txt: names lib/etpack/{name}, which does not exist')
    for top in ('lib', 'apps', os.path.join('python', 'src')):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, '/')
                own = layer_of_file(rel, layers, owner)
                if own is None:
                    if rel.startswith('lib/etpack/'):
                        continue  # reported above
                    errors.append(f'{rel}: in no layer of lib/layers.txt')
                    continue
                with open(path, encoding='utf-8') as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        to = layer_of_include(target, own, layers, owner)
                        if to is None:
                            continue
                        if to not in rank:
                            errors.append(f'{rel}:{n}: "{target}" is in no layer of lib/layers.txt')
                        elif rank[to] > rank[own]:
                            errors.append(f'{rel}:{n}: {own} -> {to} ("{target}"): '
                                          f'{to} is above {own}')
    return layers, errors


def self_test():
    """The check finds what it should in a tree made to break it."""
    files = {
        'lib/layers.txt': 'low  low.h\nhigh high.h\napps\n',
        'lib/etpack/low.h': '',
        'lib/etpack/high.h': '#include "etpack/low.h"\n',
        'lib/low/a.cc': ('#include "low/a.h"\n#include "x_generated.h"\n'
                         '#include "high/b.h"\n#include "etpack/high.h"\n'),
        'lib/low/a.h': '',
        'lib/high/b.h': '#include "low/a.h"\n#include "nowhere/c.h"\n',
        'lib/stray/d.cc': '',
        'apps/main.cc': '#include "high/b.h"\n#include "args.h"\n',
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), 'w', encoding='utf-8') as f:
                f.write(text)
        _, errors = check(root)
    want = [
        'lib/high/b.h:2: "nowhere/c.h" is in no layer of lib/layers.txt',
        'lib/low/a.cc:3: low -> high ("high/b.h"): high is above low',
        'lib/low/a.cc:4: low -> high ("etpack/high.h"): high is above low',
        'lib/stray/d.cc: in no layer of lib/layers.txt',
    ]
    if sorted(errors) != want:
        print('self-test: expected\n  ' + '\n  '.join(want) + '\ngot\n  ' + '\n  '.join(errors))
        return 1
    print('self-test: the check names every forbidden edge of the made-up tree')
    return 0


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    layers, errors = check(sys.argv[1])
    for e in errors:
        print(e)
    if errors:
        print(f'{len(errors)} include(s) against the layer order of lib/layers.txt')
        return 1
    print(f'{len(layers)} layers; every include looks down')
    return 0


if __name__ == '__main__':
    sys.exit(main())
