/*
 * vm/prims/prim_double.c — the Double primitives of SOM's Double.som.
 *
 * The receiver (args[0]) is always a Double. Integer arguments coerce to
 * Double (failing when beyond the double range); anything else fails with
 * SOM's "Expected a numeric type" message. Arithmetic is plain IEEE:
 * infinities and NaNs flow through, `//` by zero included (SOM++ and
 * TruffleSOM do so; Are We Fast Yet's CD relies on it). Comparisons against Integers are exact (vm_num_compare).
 */
#include "vm/model/primitive.h"
#include "vm/model/universe.h"
#include "vm/number/bigint.h"
#include "vm/number/numfmt.h"
#include "vm/prims/prim_number.h"

#include <math.h>

/* -- Helpers ----------------------------------------------------------------- */


/* The argument as a double, or a primitive failure. */
static bool arg_double(Oop b, double *y)
{
    if (vm_is_double(b)) {
        *y = oop_double(b);
        return true;
    }
    if (!vm_is_integer(b)) return numeric_type_error(b);
    if (!vm_int_to_double(b, y)) return vm_prim_error("Can't represent as double.");
    return true;
}

static bool not_integral(double x)
{
    return vm_prim_error("Can't represent %s as an Integer.", isnan(x) ? "NaN" : "infinity");
}

/* -- Arithmetic ---------------------------------------------------------------- */

static bool prim_add(Oop *args, Oop *result)
{
    double y;
    if (!arg_double(args[1], &y)) return false;
    return answer_double(oop_double(args[0]) + y, result);
}

static bool prim_sub(Oop *args, Oop *result)
{
    double y;
    if (!arg_double(args[1], &y)) return false;
    return answer_double(oop_double(args[0]) - y, result);
}

static bool prim_mul(Oop *args, Oop *result)
{
    double y;
    if (!arg_double(args[1], &y)) return false;
    return answer_double(oop_double(args[0]) * y, result);
}

static bool prim_double_divide(Oop *args, Oop *result)
{
    double y;
    if (!arg_double(args[1], &y)) return false;
    return answer_double(oop_double(args[0]) / y, result); /* IEEE: x // 0.0 is ±infinity or NaN */
}

static bool prim_modulo(Oop *args, Oop *result)
{
    double y;
    if (!arg_double(args[1], &y)) return false;
    return answer_double(fmod(oop_double(args[0]), y), result);
}

static bool prim_sqrt(Oop *args, Oop *result) { return answer_double(sqrt(oop_double(args[0])), result); }
static bool prim_cos(Oop *args, Oop *result) { return answer_double(cos(oop_double(args[0])), result); }
static bool prim_sin(Oop *args, Oop *result) { return answer_double(sin(oop_double(args[0])), result); }

/* Half up: 1.5 -> 2, -1.5 -> -1. x - floor(x) is exact, so 0.49999999999999994
 * does not round up as floor(x + 0.5) would. */
static bool prim_round(Oop *args, Oop *result)
{
    double x = oop_double(args[0]);
    if (!isfinite(x)) return not_integral(x);
    double f = floor(x);
    if (x - f >= 0.5) f += 1.0;
    return answer(vm_int_from_double(f), result);
}

static bool prim_as_integer(Oop *args, Oop *result)
{
    double x = oop_double(args[0]);
    if (!isfinite(x)) return not_integral(x);
    return answer(vm_int_from_double(x), result);
}

/* -- Comparing ------------------------------------------------------------------ */

/* `>`, `<=` and `>=` answer what the library's definitions through `<` and
 * `=` did (`>` was `((self < x) or: [ self = x ]) not`): a NaN on either side
 * makes `>` and `>=` true and `<=` false. As primitives they cost no send of
 * their own and machine code can inline them (vm/jit/double_inline.c). A
 * non-number argument fails as `<` did. */
static bool compare_with(Oop *args, int *c)
{
    bool ok;
    *c = vm_num_compare(args[0], args[1], &ok);
    return ok || numeric_type_error(args[1]);
}

static bool prim_greater(Oop *args, Oop *result)
{
    int c;
    if (!compare_with(args, &c)) return false;
    return answer(vm_bool(c != -1 && c != 0), result);
}

static bool prim_less_equal(Oop *args, Oop *result)
{
    int c;
    if (!compare_with(args, &c)) return false;
    return answer(vm_bool(c == -1 || c == 0), result);
}

static bool prim_greater_equal(Oop *args, Oop *result)
{
    int c;
    if (!compare_with(args, &c)) return false;
    return answer(vm_bool(c != -1), result);
}


/* -- Converting ------------------------------------------------------------------ */

static bool prim_as_string(Oop *args, Oop *result)
{
    char buf[VM_NUMFMT_DOUBLE_BUFSIZE];
    size_t len = vm_numfmt_double(oop_double(args[0]), buf);
    return answer(vm_string_new(buf, len), result);
}

/* Class side: args[0] is the class Double. */
static bool prim_positive_infinity(Oop *args, Oop *result)
{
    (void)args;
    return answer_double(INFINITY, result);
}

static bool prim_from_string(Oop *args, Oop *result)
{
    const char *text = NULL;
    size_t len = 0;
    if (!from_string_text(args[1], &text, &len)) return false;
    double d;
    if (!vm_numfmt_parse_double(text, len, &d)) return from_string_invalid(text, len, "a Double");
    return answer_double(d, result);
}

const VmPrimDef vm_prims_double[] = {
    {"Double", false, "+", prim_add},
    {"Double", false, "-", prim_sub},
    {"Double", false, "*", prim_mul},
    {"Double", false, "//", prim_double_divide},
    {"Double", false, "%", prim_modulo},
    {"Double", false, "sqrt", prim_sqrt},
    {"Double", false, "round", prim_round},
    {"Double", false, "asInteger", prim_as_integer},
    {"Double", false, "cos", prim_cos},
    {"Double", false, "sin", prim_sin},
    {"Double", false, "=", vm_prim_number_equal},
    {"Double", false, "<", vm_prim_number_less},
    {"Double", false, ">", prim_greater},
    {"Double", false, "<=", prim_less_equal},
    {"Double", false, ">=", prim_greater_equal},
    {"Double", false, "asString", prim_as_string},
    {"Double", true, "PositiveInfinity", prim_positive_infinity},
    {"Double", true, "fromString:", prim_from_string},
    {NULL, false, NULL, NULL},
};
