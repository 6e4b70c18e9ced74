/*
 * vm/jit/x64_regs.h — the short names the code generators and their tests
 * write registers by (RAX for JIT_X64_RAX), so emitting code reads like the
 * assembly it makes. Only for .c files and compile_int.h: the names are too
 * short to leak into headers the rest of the VM includes.
 */
#ifndef VM_JIT_X64_REGS_H
#define VM_JIT_X64_REGS_H

#include "vm/jit/x64.h"

#define RAX JIT_X64_RAX
#define RCX JIT_X64_RCX
#define RDX JIT_X64_RDX
#define RBX JIT_X64_RBX
#define RSP JIT_X64_RSP
#define RBP JIT_X64_RBP
#define RSI JIT_X64_RSI
#define RDI JIT_X64_RDI
#define R8 JIT_X64_R8
#define R9 JIT_X64_R9
#define R10 JIT_X64_R10
#define R11 JIT_X64_R11
#define R12 JIT_X64_R12
#define R13 JIT_X64_R13
#define R14 JIT_X64_R14
#define R15 JIT_X64_R15

#endif
