#!/usr/bin/env python3
"""Writes a random but valid SOM program for differential testing (scripts/fuzz-diff).

Usage: fuzz_diff_gen.py SEED DIR          writes DIR/FuzzSEED.som and prints its path
       fuzz_diff_gen.py SEED DIR COUNT    writes DIR/K/FuzzK.som for the COUNT seeds from SEED

The program is one class, FuzzSEED, whose run method calls a series of
randomly chosen sections (integer arithmetic across the SmallInteger/LargeInteger
boundaries, Doubles with NaN and infinities, strings and symbols, arrays,
blocks with non-local returns, polymorphic send sites, deep recursion,
allocation churn, loops with unusual bounds) and prints every result. The same
seed always gives the same text (random.Random(seed) is the only source of
choice), and nothing printed depends on hashes, identity, addresses or time,
so the output must be byte-identical in every VM mode.

Written in Python rather than C: it is tooling that never ships in the VM,
it is mostly string templating, and Python's arbitrary-precision integers make
the boundary constants easy to state.

Size: the programs are kept to a few thousand sends because the
--gc-stress --gc-verify mode collects and walks the heap at every safe point
(about 0.3 ms each with --small), and a deep stack is rescanned at each one.
"""

import os
import random
import sys

# Integers near the edges of the immediate range (62-bit SmallIntegers), of a
# machine word, and of the 32-bit range; crossing them is where fast paths break.
SMALL_MAX = (1 << 62) - 1
BOUNDARY_INTS = [
    0, 1, -1, 2, -2, 3, 7, 10, 100, 255, 256, 1000, 65535,
    (1 << 31) - 1, 1 << 31, -(1 << 31), (1 << 32) + 1, 3037000500, -3037000499,
    SMALL_MAX, SMALL_MAX - 1, -SMALL_MAX - 1, -SMALL_MAX, SMALL_MAX + 1, -SMALL_MAX - 2,
    (1 << 63) - 1, 1 << 63, -(1 << 63), -(1 << 63) - 1, (1 << 64) - 1, 1 << 64,
    12345678901234567890123, -98765432109876543210, 1 << 100,
]
# (The lexer takes no exponents: large and small values are written out.)
DOUBLE_LITS = ['0.0', '1.0', '-1.0', '0.5', '-2.25', '3.14159', '100.0', '0.1',
               '1234567.875', '-0.001', '4503599627370497.0', '10000000000.0', '9007199254740993.0',
               '0.30000000000000004', '123456789012345678901234.0']
STRING_LITS = ["''", "'a'", "'abc'", "'hello world'", "'x-y-z'", "'SOM'", "'12345'",
               "'with\\ttab'", "'quote\\'s'", "'  '", "'zz'"]
SYMBOL_LITS = ['#foo', '#bar:', '#at:put:', '#+', '#Fuzz', "#'with space'", '#a', '#value']


class Gen:
    def __init__(self, seed):
        self.seed = seed
        self.r = random.Random(seed)
        self.name = 'Fuzz%d' % seed
        self.methods = []       # source text of the generated methods
        self.run_lines = []     # statements of run
        self.n = 0              # counter for fresh names
        self.helpers = []       # (selector-prefix, arity) of generated int helpers
        # Helpers every program has: total conversions that never fail.
        self.methods.append('''    "A divisor that is never 0."
    nz: x = ( x = 0 ifTrue: [ ^7 ]. ^x )''')
        self.methods.append('''    "Rounds a Double to an Integer; NaN and infinities give 0 (their round fails)."
    safeInt: x = (
        | d |
        d := x asDouble.
        ((d = d) and: [ (d - d) = 0.0 ]) ifTrue: [ ^d round ].
        ^0 )''')
        self.methods.append('''    "Printable text of any object, arrays element by element."
    str: e = (
        | s |
        e isNil ifTrue: [ ^'nil' ].
        e class == Array ifFalse: [ ^e asString ].
        s := '('.
        e do: [ :x | s := s + ' ' + (self str: x) ].
        ^s + ' )' )''')
        self.methods.append('''    "A substring that stays inside the bounds."
    sub: s from: i len: n = (
        | a b |
        s length = 0 ifTrue: [ ^'' ].
        a := (i abs % s length) + 1.
        b := (a + n abs) min: s length.
        ^s substringFrom: a to: b )''')
        self.methods.append('''    "Keeps loop accumulators and chained temps below a few hundred bits
     (a loop of raisedTo: would otherwise grow without bound)."
    bound: x = ( x abs > (1 << 200) ifTrue: [ ^x % ((1 << 127) - 1) ]. ^x )''')
        self.methods.append('''    invoke: aBlock = ( ^aBlock value )
    invoke: aBlock with: x = ( ^aBlock value: x )
    through: n blk: aBlock = ( n = 0 ifTrue: [ ^aBlock value ]. ^self through: n - 1 blk: aBlock )''')

    def fresh(self, prefix):
        self.n += 1
        return '%s%d' % (prefix, self.n)

    def chance(self, p):
        return self.r.random() < p

    def pick(self, xs):
        return self.r.choice(xs)

    # ---- expressions: each answers SOM text of a parenthesised expression ----

    def int_lit(self):
        r = self.r.random()
        if r < 0.4:
            return str(self.r.randint(-20, 20))
        if r < 0.85:
            return str(self.pick(BOUNDARY_INTS))
        return str(self.r.randint(-10**25, 10**25))

    def int_expr(self, d, env):
        """An Integer-valued expression; env: names of Integer variables."""
        if d <= 0 or self.chance(0.2):
            if env and self.chance(0.6):
                return self.pick(env)
            return self.int_lit()
        a = lambda: self.int_expr(d - 1, env)
        k = self.r.randint(0, 27)
        if k <= 5:
            return '(%s %s %s)' % (a(), self.pick(['+', '-', '*', '+', '-']), a())
        if k == 6:
            return '(%s / (self nz: %s))' % (a(), a())
        if k == 7:
            return '(%s %% (self nz: %s))' % (a(), a())
        if k == 8:
            return '(%s rem: (self nz: %s))' % (a(), a())
        if k == 9:
            return '(%s & %s)' % (a(), a())
        if k == 10:
            return '(%s bitXor: %s)' % (a(), a())
        if k == 11:
            return '(%s << %d)' % (a(), self.r.randint(0, 70))
        if k == 12:
            return '(%s >>> %d)' % (a(), self.r.randint(0, 70))
        if k == 13:
            return '%s %s' % (a(), self.pick(['abs', 'negated', 'sign', 'squared', 'abs sqrt asInteger']))
        if k == 14:
            return '(%s %s: %s)' % (a(), self.pick(['max', 'min', 'gcd']), a())
        if k == 15:
            return '(%s ifTrue: [ %s ] ifFalse: [ %s ])' % (self.bool_expr(d - 1, env), a(), a())
        if k == 16 and self.helpers:
            sel, arity = self.pick(self.helpers)
            if arity == 1:
                return '(self %s: %s)' % (sel, a())
            return '(self %s: %s with: %s)' % (sel, a(), a())
        if k == 17:
            return '%s printString length' % a()
        if k == 18:
            return '(%s printString asInteger)' % a()
        if k == 19:
            return '(%s raisedTo: %d)' % (a(), self.r.randint(0, 4))
        if k == 20:
            return '(self safeInt: %s)' % self.double_expr(d - 1, env)
        if k == 21:
            return '(%s inject: 0 into: [ :acc :e | acc + e ])' % self.int_array_lit()
        if k == 22:
            return '([ :x | x %s %s ] value: %s)' % (self.pick(['+', '-', '*']), a(), a())
        if k == 23:
            return '(%s perform: #%s withArguments: (Array with: %s))' % (
                a(), self.pick(['+', '-', '*', 'max:', 'min:']), a())
        if k == 24:
            return '((%s) length)' % self.string_expr(d - 1, env)
        if k == 25:
            return '(%s as32BitSignedValue)' % a()
        if k == 26:
            return '(%s ifNil: [ %s ] ifNotNil: [ :v | v + 1 ])' % (
                self.pick(['nil', a()]), a())
        return '(%s %s %s)' % (a(), self.pick(['+', '-', '*']), a())

    def double_lit(self):
        return self.pick(DOUBLE_LITS)

    def double_expr(self, d, env, denv=()):
        """A Double-valued expression (NaN and infinities included)."""
        if d <= 0 or self.chance(0.2):
            r = self.r.random()
            if denv and r < 0.4:
                return self.pick(denv)
            if r < 0.75:
                return self.double_lit()
            return self.pick(['Double PositiveInfinity', '(0.0 // 0.0)', '(1.0 // 0.0)',
                              '(-1.0 // 0.0)', '(0.0 * -1.0)', '(1 // 3)'])
        a = lambda: self.double_expr(d - 1, env, denv)
        k = self.r.randint(0, 14)
        if k <= 3:
            return '(%s %s %s)' % (a(), self.pick(['+', '-', '*', '//']), a())
        if k == 4:
            return '(%s %% %s)' % (a(), a())
        if k == 5:
            return '%s %s' % (a(), self.pick(['sqrt', 'sin', 'cos', 'abs', 'negated', 'squared']))
        if k == 6:
            return '%s asDouble' % self.int_expr(d - 1, env)
        if k == 7:
            return '(%s // %s)' % (self.int_expr(d - 1, env), self.pick(['0', '3', '-7', '0.0', a()]))
        if k == 8:
            return '(%s %s %s)' % (self.int_expr(d - 1, env), self.pick(['+', '-', '*']), a())
        if k == 9:
            return '(%s %s %s)' % (a(), self.pick(['+', '-', '*']), self.int_expr(d - 1, env))
        if k == 10:
            return '(%s %s: %s)' % (a(), self.pick(['max', 'min']), a())
        if k == 11:
            return '(%s raisedTo: %d)' % (a(), self.r.randint(0, 5))
        if k == 12:
            return '(%s ifTrue: [ %s ] ifFalse: [ %s ])' % (self.bool_expr(d - 1, env), a(), a())
        if k == 13:
            return '(Double fromString: %s printString)' % a()
        return '(%s abs sqrt asDouble)' % self.int_expr(d - 1, env)  # sqrt may be exact

    def bool_expr(self, d, env):
        if d <= 0 or self.chance(0.15):
            return self.pick(['true', 'false', '(3 < 4)', '(nil isNil)'])
        k = self.r.randint(0, 11)
        cmp = self.pick(['<', '>', '<=', '>=', '=', '~=', '<>', '=='])
        if k <= 3:
            return '(%s %s %s)' % (self.int_expr(d - 1, env), cmp, self.int_expr(d - 1, env))
        if k == 4:
            # Not == or ~= on Doubles: those compare boxes by identity.
            cmp = {'==': '=', '~=': '<>'}.get(cmp, cmp)
            return '(%s %s %s)' % (self.double_expr(d - 1, env), cmp,
                                   self.pick([self.double_expr(d - 1, env), self.int_expr(d - 1, env)]))
        if k == 5:
            return '(%s %s)' % (self.int_expr(d - 1, env), self.pick(['even', 'odd', 'negative', 'isNil', 'notNil']))
        if k == 6:
            return '(%s and: [ %s ])' % (self.bool_expr(d - 1, env), self.bool_expr(d - 1, env))
        if k == 7:
            return '(%s or: [ %s ])' % (self.bool_expr(d - 1, env), self.bool_expr(d - 1, env))
        if k == 8:
            return '(%s %s %s)' % (self.bool_expr(d - 1, env), self.pick(['&', '|']), self.bool_expr(d - 1, env))
        if k == 9:
            return '%s not' % self.bool_expr(d - 1, env)
        if k == 10:
            return '(%s = %s)' % (self.string_expr(d - 1, env), self.string_expr(d - 1, env))
        return '(%s between: %s and: %s)' % (self.int_expr(d - 1, env), self.int_expr(d - 1, env),
                                             self.int_expr(d - 1, env))

    def string_expr(self, d, env):
        if d <= 0 or self.chance(0.2):
            return self.pick(STRING_LITS)
        a = lambda: self.string_expr(d - 1, env)
        k = self.r.randint(0, 10)
        if k <= 1:
            return '(%s + %s)' % (a(), a())
        if k == 2:
            return '%s printString' % self.int_expr(d - 1, env)
        if k == 3:
            return '%s printString' % self.double_expr(d - 1, env)
        if k == 4:
            return '(%s + %s)' % (a(), self.pick([self.int_expr(d - 1, env), self.double_expr(d - 1, env),
                                                  'nil', 'true', self.pick(SYMBOL_LITS)]))
        if k == 5:
            return '(self sub: %s from: %s len: %d)' % (a(), self.int_expr(d - 1, env), self.r.randint(0, 6))
        if k == 6:
            return '%s asSymbol asString' % a()
        if k == 7:
            return '%s asString' % self.pick(SYMBOL_LITS)
        if k == 8:
            return '(%s concatenate: %s)' % (a(), a())
        if k == 9:
            return '(self str: %s)' % self.any_array(d - 1, env)
        return '(%s ifTrue: [ %s ] ifFalse: [ %s ])' % (self.bool_expr(d - 1, env), a(), a())

    def int_array_lit(self):
        return '#(%s)' % ' '.join(self.int_lit() for _ in range(self.r.randint(0, 6)))

    def any_lit(self):
        k = self.r.randint(0, 6)
        if k <= 1:
            return self.int_lit()
        if k == 2:
            return self.double_lit()
        if k == 3:
            return self.pick(STRING_LITS)
        if k == 4:
            return self.pick(SYMBOL_LITS)
        if k == 5:
            return self.pick(['nil', 'true', 'false'])
        return '#(%s)' % ' '.join(self.int_lit() for _ in range(self.r.randint(0, 3)))

    def any_array(self, d, env):
        k = self.r.randint(0, 5)
        if k == 0:
            return '#(%s)' % ' '.join(self.any_lit().replace('#(', '(') for _ in range(self.r.randint(0, 6)))
        if k == 1:
            return '(Array new: %d)' % self.r.randint(0, 4)
        if k == 2:
            return '(Array with: %s with: %s)' % (self.any_expr(d - 1, env), self.any_expr(d - 1, env))
        if k == 3:
            return '(%d to: %d)' % (self.r.randint(-3, 3), self.r.randint(-2, 6))
        if k == 4:
            return '(%s collect: [ :e | e %s %s ])' % (self.int_array_lit(), self.pick(['+', '*', '-']),
                                                      self.int_expr(d - 1, env))
        return '(%s copyFrom: 2)' % self.int_array_lit()

    def any_expr(self, d, env):
        k = self.r.randint(0, 7)
        if k <= 1:
            return self.int_expr(d, env)
        if k == 2:
            return self.double_expr(d, env)
        if k == 3:
            return self.string_expr(d, env)
        if k == 4:
            return self.bool_expr(d, env)
        if k == 5:
            return self.any_array(d, env)
        if k == 6:
            return self.pick(SYMBOL_LITS)
        return self.pick(['nil', '[ 42 ]', '[ :x | x ]', 'Array', self.name, 'self'])

    # ---- sections: each adds a method (and maybe helpers) and the calls in run ----

    def add(self, text):
        self.methods.append(text)

    def print_stmt(self, expr, kind='any'):
        if kind == 'any':
            return '(self str: %s) println.' % expr
        return '%s println.' % expr

    def sec_int_helper(self):
        sel = self.fresh('ih')
        arity = self.r.randint(1, 2)
        env = ['a'] if arity == 1 else ['a', 'b']
        body = self.int_expr(3, env)
        if arity == 1:
            self.add('    %s: a = ( ^%s )' % (sel, body))
        else:
            self.add('    %s: a with: b = ( ^%s )' % (sel, body))
        self.helpers.append((sel, arity))

    def sec_int(self):
        sel = self.fresh('int')
        lines = []
        env = ['a', 'b']
        temps = []
        for _ in range(self.r.randint(2, 6)):
            t = self.fresh('t')
            lines.append('%s := self bound: %s.' % (t, self.int_expr(self.r.randint(1, 4), env)))
            lines.append('%s println.' % t)
            temps.append(t)
            env = env + [t]
        for _ in range(self.r.randint(1, 4)):
            lines.append('%s println.' % self.bool_expr(2, env))
        lines.append('^%s' % self.int_expr(2, env))
        self.add('    %s: a with: b = (\n        | %s |\n        %s )' % (sel, ' '.join(temps), '\n        '.join(lines)))
        args = [self.int_lit() for _ in range(self.r.randint(2, 4))]
        self.run_lines.append('#(%s) do: [ :x | (self %s: x with: %s) println ].' % (' '.join(args), sel, self.int_lit()))

    def sec_double(self):
        sel = self.fresh('dbl')
        lines = []
        denv = ['a', 'b']
        for _ in range(self.r.randint(2, 6)):
            e = self.double_expr(self.r.randint(1, 4), ['i'], denv)
            lines.append('%s println.' % e)
        for _ in range(self.r.randint(1, 3)):
            lines.append('%s println.' % self.bool_expr(2, ['i']))
        lines.append('(self safeInt: %s) println.' % self.double_expr(2, ['i'], denv))
        self.add('    %s: a with: b = (\n        | i |\n        i := %s.\n        %s )' % (
            sel, self.int_lit(), '\n        '.join(lines)))
        args = [self.double_expr(1, []) for _ in range(self.r.randint(1, 3))]
        for x in args:
            self.run_lines.append('self %s: %s with: %s.' % (sel, x, self.double_expr(1, [])))

    def sec_string(self):
        sel = self.fresh('str')
        lines = ['s := %s.' % self.string_expr(2, ['n'])]
        for _ in range(self.r.randint(2, 6)):
            k = self.r.randint(0, 6)
            if k == 0:
                lines.append('s := s + %s.' % self.string_expr(2, ['n']))
            elif k == 1:
                lines.append('s length println.')
            elif k == 2:
                lines.append('(s = %s) println.' % self.string_expr(1, ['n']))
            elif k == 3:
                lines.append('s asSymbol println.')
            elif k == 4:
                lines.append('(s indexOf: %s) println.' % self.pick(STRING_LITS))
            elif k == 5:
                lines.append('(self str: (s split: %s)) println.' % self.pick(["'-'", "' '", "'l'", "'a'"]))
            else:
                lines.append('((s beginsWith: %s) or: [ s endsWith: %s ]) println.' % (
                    self.pick(STRING_LITS), self.pick(STRING_LITS)))
            lines.append('s println.')
        sym = self.pick(SYMBOL_LITS)
        lines.append('(%s + %s) println.' % (sym, self.pick(STRING_LITS)))
        lines.append('(s asSymbol == s asSymbol) println.')
        lines.append('(%s asString = %s) println.' % (sym, sym))
        lines.append('^s length')
        self.add('    %s: n = (\n        | s |\n        %s )' % (sel, '\n        '.join(lines)))
        for _ in range(self.r.randint(1, 3)):
            self.run_lines.append('(self %s: %s) println.' % (sel, self.int_lit()))

    def sec_array(self):
        sel = self.fresh('arr')
        n = self.r.randint(0, 12)
        lines = ['a := Array new: %d.' % n,
                 '1 to: a length do: [ :i | a at: i put: %s ].' % self.int_expr(2, ['i', 'k'])]
        for _ in range(self.r.randint(2, 5)):
            k = self.r.randint(0, 9)
            if k == 0:
                lines.append('(self str: a) println.')
            elif k == 1:
                lines.append('(a inject: 0 into: [ :acc :e | acc + e ]) println.')
            elif k == 2:
                lines.append('(self str: (a collect: [ :e | %s ])) println.' % self.int_expr(2, ['e', 'k']))
            elif k == 3:
                lines.append('(a detect: [ :e | %s ]) println.' % self.bool_expr(2, ['e']))
            elif k == 4:
                lines.append('a reverseDo: [ :e | s := s + e printString + %s ].\n        s println.' % self.pick(STRING_LITS))
            elif k == 5:
                lines.append('(a contains: %s) println.\n        (a indexOf: %s) println.' % (
                    self.int_expr(1, ['k']), self.int_expr(1, ['k'])))
            elif k == 6:
                lines.append('(self str: (a copyFrom: %d to: %d)) println.' % (
                    min(n, self.r.randint(1, 3)), min(n, self.r.randint(0, n))) if n > 0 else 'a isEmpty println.')
            elif k == 7:
                lines.append('(self str: %s) println.' % self.any_array(2, ['k']))
            elif k == 8:
                lines.append('b := (a select: [ :e | %s ]) asArray.\n        (self str: b) println.' % self.bool_expr(2, ['e', 'k']))
            else:
                lines.append('(self str: ((a collect: [ :e | e printString ]) %s)) println.' % (
                    'join: \',\'' if n > 0 else 'isEmpty'))
        lines.append('^a length')
        self.add('    %s: k = (\n        | a b s |\n        s := \'\'.\n        %s )' % (sel, '\n        '.join(lines)))
        for _ in range(self.r.randint(1, 3)):
            self.run_lines.append('(self %s: %s) println.' % (sel, self.int_lit()))

    def sec_nlr(self):
        k = self.r.randint(0, 7)
        sel = self.fresh('nlr')
        test = self.bool_expr(2, ['e', 'x'])
        if k == 0:
            self.add('''    %s: x in: arr = (
        arr do: [ :e | %s ifTrue: [ ^'found ' + e printString ] ].
        ^'none' )''' % (sel, test))
            for _ in range(self.r.randint(1, 3)):
                self.run_lines.append('(self %s: %s in: %s) println.' % (sel, self.int_lit(), self.int_array_lit()))
        elif k == 1:
            depth = self.r.randint(0, 40)
            self.add('''    %s: x = (
        self through: %d blk: [ x > 0 ifTrue: [ ^'positive via %d' ]. %s ].
        ^'fell through' )''' % (sel, depth, depth, self.int_expr(2, ['x'])))
            for _ in range(self.r.randint(1, 3)):
                self.run_lines.append('(self %s: %s) println.' % (sel, self.int_lit()))
        elif k == 2:
            self.add('''    %s: x = (
        | blk |
        blk := [ :e | e %s x ifTrue: [ ^e ]. e ].
        1 to: %d do: [ :i | self invoke: blk with: i * %s ].
        ^nil )''' % (sel, self.pick(['>', '<', '=', '>=']), self.r.randint(1, 30), self.int_lit()))
            for _ in range(self.r.randint(1, 3)):
                self.run_lines.append('(self %s: %s) println.' % (sel, self.int_lit()))
        elif k == 3:
            self.add('''    %s: x = (
        ^#(%s) inject: 0 into: [ :acc :e |
            (acc + e) abs > x abs ifTrue: [ ^'over ' + acc printString ].
            acc + e ] )''' % (sel, ' '.join(self.int_lit() for _ in range(self.r.randint(1, 6)))))
            for _ in range(self.r.randint(1, 3)):
                self.run_lines.append('(self %s: %s) println.' % (sel, self.int_lit()))
        elif k == 4:
            # Nested blocks three deep, the inner one returning from the method.
            self.add('''    %s: x = (
        | r |
        r := [ :a | [ :b | [ :c | c > 2 ifTrue: [ ^'deep ' + (a + b + c) printString ]. c ] value: b + 1 ] value: a + 1 ] value: x.
        ^'shallow ' + r printString )''' % sel)
            for _ in range(self.r.randint(1, 3)):
                self.run_lines.append('(self %s: %d) println.' % (sel, self.r.randint(-3, 3)))
        elif k == 5:
            # Out of a non-inlined whileTrue: (the receiver is not a literal block).
            self.add('''    %s: x = (
        | i cond |
        i := 0.
        cond := [ i < 1000 ].
        cond whileTrue: [ i := i + 1. i * i > x ifTrue: [ ^i ] ].
        ^-1 )''' % sel)
            for _ in range(self.r.randint(1, 3)):
                self.run_lines.append('(self %s: %d) println.' % (sel, self.r.randint(-5, 5000)))
        elif k == 6:
            # The block is created in one method and its home returned to from a deeper one.
            self.add('''    %s: x = (
        | v |
        v := self %sInner: [ :e | e = x ifTrue: [ ^'hit ' + e printString ]. e ] upTo: %d.
        ^'miss ' + v printString )
    %sInner: blk upTo: n = (
        | s |
        s := 0.
        1 to: n do: [ :i | s := s + (blk value: i) ].
        ^s )''' % (sel, sel, self.r.randint(1, 40), sel))
            for _ in range(self.r.randint(1, 3)):
                self.run_lines.append('(self %s: %d) println.' % (sel, self.r.randint(-2, 45)))
        else:
            # Local returns (no ^) of blocks that close over and update temps.
            self.add('''    %s: x = (
        | count mk blocks |
        count := 0.
        mk := [ :step | [ count := count + step. count ] ].
        blocks := Array new: 3.
        1 to: 3 do: [ :i | blocks at: i put: (mk value: i * x) ].
        blocks do: [ :b | b value. b value ].
        ^count + (blocks inject: 0 into: [ :acc :b | acc + b value ]) )''' % sel)
            for _ in range(self.r.randint(1, 3)):
                self.run_lines.append('(self %s: %s) println.' % (sel, self.int_lit()))

    def poly_pool(self):
        return [self.int_lit(), self.int_lit(), self.double_lit(), '(0.0 // 0.0)', 'Double PositiveInfinity',
                self.pick(STRING_LITS), self.pick(SYMBOL_LITS), 'nil', 'true', 'false',
                self.int_array_lit(), '[ 42 ]', '[ :z | z isNil ]', self.name, 'self', '(1 << 80)',
                "('a' , 'b')"]

    def sec_poly(self):
        sel = self.fresh('poly')
        pool = self.poly_pool()
        elems = [self.pick(pool) for _ in range(self.r.randint(3, 12))]
        fill = '\n        '.join('objs at: %d put: %s.' % (i + 1, e) for i, e in enumerate(elems))
        site = self.pick([
            '(self str: e) println',
            'e asString println',
            '(e = %s) println' % self.pick(pool),
            '(e == e) println',
            'e isNil println',
            '(e ifNil: [ \'N\' ] ifNotNil: [ :v | v class name ]) println',
            '(self str: e value) println',
            '(e perform: #asString) length println',
            '(e respondsTo: #length) println',
            '(self %sOn: e) println' % sel,
        ])
        self.add('''    %sOn: e = (
        e isNil ifTrue: [ ^'nil!' ].
        (e respondsTo: #length) ifTrue: [ ^'len ' + e length printString ].
        ^e class name asString )''' % sel)
        self.add('''    %s: reps = (
        | objs |
        objs := Array new: %d.
        %s
        1 to: reps do: [ :r | objs do: [ :e | %s ] ] )''' % (sel, len(elems), fill, site))
        self.run_lines.append('self %s: %d.' % (sel, self.r.randint(1, 4)))

    def sec_recursion(self):
        sel = self.fresh('rec')
        # Mostly moderate depths (several 64 KiB stack pages under --small);
        # now and then a very deep one.
        # (The cost under --gc-stress grows with the square of the depth:
        # 5000 frames take about a second there, and 6000 frames that each
        # allocate, run twice, passed a minute on a loaded machine.)
        depth = self.r.randint(50, 1500) if self.chance(0.93) else self.r.randint(2500, 4000)
        k = self.r.randint(0, 4)
        if k == 0:
            self.add('''    %s: n = (
        n = 0 ifTrue: [ ^%s ].
        ^(self %s: n - 1) %s n )''' % (sel, self.int_lit(), sel, self.pick(['+', '-', 'bitXor:', 'max:'])))
            self.run_lines.append('(self %s: %d) println.' % (sel, depth))
        elif k == 1:
            self.add('''    %s: n = (
        | a |
        n = 0 ifTrue: [ ^0 ].
        a := Array new: 3.
        a at: 1 put: n.
        a at: 2 put: n printString.
        ^(self %s: n - 1) + (a at: 1) + (a at: 2) length )''' % (sel, sel))
            self.run_lines.append('(self %s: %d) println.' % (sel, depth))
        elif k == 2:
            self.add('''    %s: n blk: b = (
        n = 0 ifTrue: [ b value ].
        self %s: n - 1 blk: b.
        ^'not reached' )
    %sStart: n = (
        self %s: n blk: [ ^'unwound ' + n printString ].
        ^'wrong' )''' % (sel, sel, sel, sel))
            self.run_lines.append('(self %sStart: %d) println.' % (sel, depth))
        elif k == 3:
            self.add('''    %sEven: n = ( n = 0 ifTrue: [ ^true ]. ^self %sOdd: n - 1 )
    %sOdd: n = ( n = 0 ifTrue: [ ^false ]. ^self %sEven: n - 1 )''' % (sel, sel, sel, sel))
            self.run_lines.append('(self %sEven: %d) println.' % (sel, depth))
        else:
            depth = min(depth, 300)   # four frames a level (inject:into:, do:, to:do:, the block)
            self.add('''    %s: n = (
        n = 0 ifTrue: [ ^%s ].
        ^#(1) inject: n into: [ :acc :e | acc + (self %s: n - 1) ] )''' % (sel, self.int_lit(), sel))
            self.run_lines.append('(self %s: %d) println.' % (sel, depth))

    def sec_churn(self):
        sel = self.fresh('churn')
        n = self.r.randint(50, 1000)
        k = self.r.randint(0, 2)
        if k == 0:
            self.add('''    %s: n = (
        | keep acc |
        keep := Array new: %d.
        acc := 0.
        1 to: n do: [ :i | | a |
            a := Array new: (i %% 5) + 2.
            a at: 1 put: i.
            a at: a length put: i printString.
            keep at: (i %% keep length) + 1 put: a.
            acc := acc + (a at: 1) + (a at: a length) length ].
        keep do: [ :a | a isNil ifFalse: [ acc := acc + (a at: 1) ] ].
        ^acc )''' % (sel, self.r.randint(1, 9)))
        elif k == 1:
            self.add('''    %s: n = (
        | acc m |
        acc := %s.
        m := %s.
        1 to: n do: [ :i | acc := (acc * %s + i) %% m ].
        ^acc )''' % (sel, self.int_lit(), self.pick(['(1 << 80)', '(1 << 64) + 13', '1000000007', '(1 << 62)']),
                     self.pick(['31', '-7', '4611686018427387903', '(1 << 70)'])))
        else:
            self.add('''    %s: n = (
        | s parts |
        s := ''.
        parts := Array new: 4.
        1 to: n do: [ :i |
            s := s + i printString.
            s length > 60 ifTrue: [ parts at: (i %% 4) + 1 put: s. s := '' ] ].
        ^s + (self str: parts) length printString )''' % sel)
        self.run_lines.append('(self %s: %d) println.' % (sel, n))

    def sec_loops(self):
        sel = self.fresh('loop')
        lines = ['s := 0.']
        for _ in range(self.r.randint(1, 4)):
            k = self.r.randint(0, 6)
            if k == 0:
                lo = self.pick(BOUNDARY_INTS)
                lines.append('%d to: %d do: [ :i | s := s + i ].' % (lo, lo + self.r.randint(-1, 8)))
            elif k == 1:
                lo = self.pick(BOUNDARY_INTS)
                step = self.pick([1, 2, 3, -1, -2, 1 << 40, 1 << 62, -(1 << 62)])
                hi = lo + step * self.r.randint(-1, 6)
                lines.append('%d to: %d by: %d do: [ :i | s := s + (i %% 1000) ].' % (lo, hi, step))
            elif k == 2:
                lo = self.pick(BOUNDARY_INTS)
                lines.append('%d downTo: %d do: [ :i | s := s - i ].' % (lo, lo - self.r.randint(-1, 8)))
            elif k == 3:
                lines.append('%s to: %s do: [ :d | s := s + (self safeInt: d * 10) ].' % (
                    self.pick(['0.5', '1.25', '-2.5', '0', '3']), self.pick(['4.75', '6', '2.0', '(0.0 // 0.0)'])))
            elif k == 4:
                lines.append('i := %d.\n        [ i > 0 ] whileTrue: [ s := self bound: s + %s. i := i - 1 ].' % (
                    self.r.randint(0, 30), self.int_expr(2, ['i', 's'])))
            elif k == 5:
                lines.append('i := 0.\n        [ i >= %d ] whileFalse: [ i := i + 1. i even ifTrue: [ s := s bitXor: i ] ].' % self.r.randint(0, 30))
            else:
                lines.append('%d timesRepeat: [ s := s * 3 + 1 ].' % self.r.randint(0, 50))
            lines.append('s println.')
        lines.append('^s')
        self.add('    %s = (\n        | s i |\n        %s )' % (sel, '\n        '.join(lines)))
        self.run_lines.append('self %s println.' % sel)
        if self.chance(0.5):
            self.run_lines.append('self %s println.' % sel)

    def sec_fields(self):
        sel = self.fresh('fld')
        self.add('''    %s: x = (
        f1 := x.
        f2 := Array new: 3.
        f2 at: 1 put: x printString.
        f2 at: 2 put: [ :y | f1 := f1 + y. f1 ].
        f3 := (f2 at: 2) value: %s.
        other := %s new.
        other setF1: f3.
        ^(other getF1 = f1) asString + ' ' + (self str: f2) + ' ' + f1 printString )''' % (
            sel, self.int_expr(2, ['x']), self.name))
        self.run_lines.append('(self %s: %s) println.' % (sel, self.int_lit()))
        self.uses_fields = True

    def sec_special(self):
        # The class defines its own versions of selectors that have special
        # bytecodes and fast paths (== at: at:put: length value + < =): each
        # site sees both the fast-path receivers and this class.
        sel = self.fresh('spc')
        if not self.special_defined:
            self.special_defined = True
            self.add('''    == other = ( ^(other respondsTo: #getF1) and: [ other getF1 = f1 ] )
    = other = ( ^self == other )
    at: i = ( ^i * 2 )
    at: i put: v = ( f1 := v. ^v )
    length = ( ^42 )
    value = ( ^'my value' )
    value: x = ( ^x )
    + x = ( ^'plus ' + x asString )
    < x = ( ^true )
    mustBeBoolean = ( ^f1 isNil not )''')
        self.add('''    %s: k = (
        | objs twin |
        twin := %s new.
        twin setF1: k.
        f1 := %s.
        objs := Array new: 6.
        objs at: 1 put: self.
        objs at: 2 put: (Array new: 3).
        objs at: 3 put: twin.
        objs at: 4 put: %s.
        objs at: 5 put: %s.
        objs at: 6 put: %s.
        1 to: %d do: [ :r |
            objs do: [ :o |
                (o == twin) println.
                (o == k) println.
                (o respondsTo: #getF1) ifTrue: [
                    (o at: 1 put: r) println. (o at: k) println. (o value: r) println.
                    (o ifTrue: [ 'T' ] ifFalse: [ 'F' ]) println.
                    (o and: [ r > 1 ]) println.
                    (o or: [ r > 1 ]) println ].
                (o respondsTo: #length) ifTrue: [ o length println ].
                (o class == Array) ifTrue: [ o at: 1 put: k. (o at: 1) println. o length println ].
                (o = self) println.
                o value println ] ].
        (self + k) println.
        (self < k) println.
        (self at: k) println.
        ^twin == self )''' % (sel, self.name, self.pick(['k', '0', 'nil']),
                              self.pick(STRING_LITS), self.pick(SYMBOL_LITS + ['3', '(1 << 70)', '2.5']),
                              self.pick(['[ k ]', 'nil', 'true', '7']), self.r.randint(1, 3)))
        self.run_lines.append('(self %s: %s) println.' % (sel, self.int_lit()))

    def sec_literals(self):
        # More than 256 distinct literals: the wide literal bytecodes, in a
        # method run both interpreted and compiled.
        sel = self.fresh('lits')
        n = self.r.randint(260, 320)
        vals = []
        for i in range(n):
            k = self.r.randint(0, 2)
            if k == 0:
                vals.append(str(self.r.randint(-10**30, 10**30)))
            elif k == 1:
                vals.append('%d.%d' % (self.r.randint(-9999, 9999), self.r.randint(1, 999)))
            else:
                vals.append("'lit%d'" % self.r.randint(0, 10**6))
        terms = ' + '.join('(self litNum: %s)' % v for v in vals)
        self.add("""    %s = (
        ^%s )""" % (sel, terms))
        if not self.litnum_defined:
            self.litnum_defined = True
            self.add("""    litNum: x = ( x class == String ifTrue: [ ^x length ]. ^self safeInt: x )""")
        self.run_lines.append('self %s println.' % sel)
        self.run_lines.append('self %s println.' % sel)

    def sec_globals(self):
        # PUSH_GLOBAL caches a global's value in machine code until the next
        # global:put:; read, change and read again, in a loop. The values are
        # young Arrays, so the caching code is a young referrer the scavenger
        # must update.
        sel = self.fresh('glob')
        g = 'FuzzGlobal%d' % self.r.randint(0, 3)
        self.add("""    %s: k = (
        | s |
        s := 0.
        system global: #%s put: (Array with: k with: k printString).
        1 to: %d do: [ :i |
            s := s + (%s at: 1) + (%s at: 2) length.
            i %% %d = 0 ifTrue: [ system global: #%s put: (Array with: (%s at: 1) + i with: i printString) ] ].
        (self str: (system global: #%s)) println.
        ^s )""" % (sel, g, self.r.randint(1, 40), g, g, self.r.randint(1, 7), g, g, g))
        self.run_lines.append('(self %s: %s) println.' % (sel, self.int_lit()))

    def sec_classside(self):
        # Class-side methods and fields, super sends, reflection.
        sel = self.fresh('cls')
        self.class_methods.append("""    %s: x = ( count := (count ifNil: [ 0 ]) + 1. ^x + count )""" % sel)
        self.add("""    %s: k = (
        | v |
        v := Vector new.
        1 to: %d do: [ :i | v append: (%s %s: i * k) ].
        v removeFirst println.
        (v inject: 0 into: [ :a :e | a + e ]) println.
        (v collect: [ :e | e %% 10 ]) asArray length println.
        (self instVarAt: 1 put: k) println.
        (self instVarAt: 1) println.
        super asString println.
        (super = self) println.
        (self perform: #getF1) println.
        ^v size )""" % (sel, self.r.randint(1, 20), self.name, sel))
        self.run_lines.append('(self %s: %s) println.' % (sel, self.int_lit()))

    def sec_repeat(self):
        # Library loops built on Block>>restart, left with ^.
        sel = self.fresh('rpt')
        self.add("""    %s: k = (
        | i blk |
        i := 0.
        blk := [ i := i + 1. i < %d ].
        blk whileTrue.
        [ i := i - 2. i > %d ] whileTrue.
        [ i := i + 3. i >= %d ] whileFalse.
        [ i := i + 1. i > (%d + (k abs %% 50)) ifTrue: [ ^i ] ] repeat )"""
                 % (sel, self.r.randint(0, 40), self.r.randint(-10, 10), self.r.randint(-5, 30), self.r.randint(0, 60)))
        self.run_lines.append('(self %s: %s) println.' % (sel, self.int_lit()))

    def sec_error(self):
        # A run that ends with an error: the message, the backtrace (bytecode
        # positions mapped back from machine code) and the exit status must agree.
        k = self.r.randint(0, 5)
        sel = self.fresh('err')
        body = ['nil foo', '(Array new: 3) at: 4', '3 / 0', "'abc' charAt: 10", 'self noSuchMessage: 3',
                '(self escaping: e) value: 3'][k]
        if k == 5:
            self.add('    escaping: e = ( ^[ :x | ^x + e ] )')
        self.add('''    %s: n = (
        1 to: n do: [ :i | i = n ifTrue: [ #(1 2) do: [ :e | %s ] ] ] )''' % (sel, body))
        self.run_lines.append('self %s: %d.' % (sel, self.r.randint(1, 20)))

    def generate(self):
        self.uses_fields = False
        self.special_defined = False
        self.litnum_defined = False
        self.class_methods = []
        for _ in range(self.r.randint(0, 3)):
            self.sec_int_helper()
        sections = [self.sec_int, self.sec_int, self.sec_double, self.sec_double, self.sec_string,
                    self.sec_array, self.sec_nlr, self.sec_nlr, self.sec_poly, self.sec_recursion,
                    self.sec_churn, self.sec_loops, self.sec_fields, self.sec_special,
                    self.sec_literals, self.sec_globals, self.sec_classside, self.sec_classside,
                    self.sec_repeat]
        for _ in range(self.r.randint(4, 9)):
            self.pick(sections)()
        # Run the sections in order; then again, hot (the JIT compiles them
        # at its second call), a quarter of the time.
        body = list(self.run_lines)
        if self.chance(0.25):
            body.append("'-- again' println.")
            body.extend(self.run_lines)
        if self.chance(0.05):
            self.sec_error()
            body.append(self.run_lines[-1])
        out = ['"Generated by scripts/fuzz_diff_gen.py, seed %d."' % self.seed,
               '%s = (' % self.name,
               '    | f1 f2 f3 other |',
               '',
               '    run = (',
               '        ' + '\n        '.join(body),
               '    )',
               '',
               '    setF1: v = ( f1 := v )',
               '    getF1 = ( ^f1 )',
               '']
        out.append('\n\n'.join(self.methods))
        out.append('')
        out.append('    ----')
        out.append('')
        out.append('    | count |')
        out.append('')
        out.append('\n'.join(self.class_methods))
        out.append(')')
        return '\n'.join(out) + '\n'


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit('usage: fuzz_diff_gen.py SEED DIR [COUNT]')
    seed = int(sys.argv[1])
    count = int(sys.argv[2 + 1]) if len(sys.argv) == 4 else 1
    # With a COUNT, seed k goes to DIR/k/Fuzzk.som: one interpreter start-up
    # for the whole batch (it costs more than generating a program).
    for s in range(seed, seed + count):
        g = Gen(s)
        text = g.generate()
        if count == 1:
            path = '%s/%s.som' % (sys.argv[2], g.name)
        else:
            os.makedirs('%s/%d' % (sys.argv[2], s), exist_ok=True)
            path = '%s/%d/%s.som' % (sys.argv[2], s, g.name)
        with open(path, 'w') as f:
            f.write(text)
        print(path)


if __name__ == '__main__':
    main()
