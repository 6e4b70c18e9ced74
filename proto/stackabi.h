/*
 * proto/stackabi.h — whole stacks read at the moment of a sample: the
 * facts the VM publishes so a walker outside it can find every Smalltalk
 * frame (ProfWalkFacts, in the export segment from version 3), the raw
 * record a walker captures (ProfRawStack), and the unwind rules of machine
 * code (ProfUnwindRule, in the code events' LOAD records).
 *
 * Three walkers capture ProfRawStack with the same algorithm (below): the
 * eBPF program on vmprofd's perf events (in the kernel, at the sample),
 * vmprofd's ptrace mode (the thread stopped) and the in-VM sampler (in the
 * SIGPROF handler, on the VM thread). None of them needs the code
 * timeline: what depends on which code was where (the unwind rule of a
 * frameless piece, the method of a pc) is decided afterwards, from the raw
 * record and the code event log (report/resolve.c). The walkers record
 * addresses, never object identities: addresses resolve against the code
 * as it was at the sample's time, objects move.
 *
 * Plain fixed-width C types only: the BPF program includes this header.
 * Part of the export's wire format (proto/export.h): header-only, target
 * proto_export.
 *
 * Who may include: vm/ (the layouts the interpreter and the JIT publish and pin),
 * profiler/ (the facts' writer, the in-VM walker), report/ and vmprofd/
 * (walkers and readers; vmprofd/bpf/ too), tests.
 *
 * -- The algorithm (every walker) ---------------------------------------------
 *
 * Inputs: the sampled user registers ip, sp, bp, r14, r15 and the facts F.
 * read(a) is one 8-byte user read; a failed read stops that part of the
 * walk, and in the Smalltalk chain sets PROF_RAW_F_FAULT (a native walk
 * just ends there, as perf's does). zone(a): F.zone_start <= a < F.zone_end;
 * interp(a): F.interp_start <= a < F.interp_end; stack(a):
 * F.stack_base <= a < F.stack_base + F.page_bytes * F.npages.
 * anchors: F.flags & PROF_WALK_F_ANCHORS (the VM keeps the anchors below).
 *
 * The anchors (the VM's record of where Smalltalk called C, as HotSpot's
 * last-Java-frame): machine code calls C only through runtime trampolines,
 * which store the Smalltalk sp/fp in st_sp/st_fp before they switch to the
 * C stack and clear st_sp when the C routine has returned; the interpreter
 * stores its frame and bytecode ip in PRIM_FP/PRIM_IP before it calls a
 * primitive and clears PRIM_FP after. So while that C runs, whatever it
 * calls (a library without frame pointers, one that uses r14/r15), the
 * Smalltalk side is known without unwinding a single native frame.
 *
 *   mode = read(F.state_addr + PROF_STATE_MODE)
 *   MODE_MACHINE (machine code owns the thread: inside an enilopmart):
 *     c_sp = read(F.cstate_addr + PROF_CSTATE_C_SP)
 *     if zone(ip) and stack(sp):  raw.mode = MACHINE; top_pc = ip; top_sp = sp; top_fp = bp
 *     else if zone(ip) (a trampoline running on the C stack): leaf[0] = ip
 *           and CSTATE as below (the rule of ip's piece decides, later,
 *           whether st_sp/st_fp are valid there)
 *     else: leaf[0] = ip, and unless interp(ip) (the interpreter taking
 *           its registers back) the native walk from (ip, bp) into leaf[]
 *           (then return addresses [bp+8], bp = [bp], ...), each frame
 *           within sp <= bp < c_sp (C called from machine code runs below
 *           the enilopmart's frame), until a return address r with
 *           zone(r) (not kept) or the end of the walk (then leaf[] keeps
 *           ip alone: only a chain that ends there is known to be frames);
 *           then
 *           st_sp = read(F.cstate_addr + PROF_CSTATE_ST_SP) and
 *           anchors: st_sp != 0 (C called through a trampoline runs,
 *             whatever the walk reached): CSTATE;
 *           not anchors: the walk reached such an r: CSTATE;
 *           else raw.mode = UNKNOWN (machine code is being entered or
 *           left: no exact answer), reason PROF_RAW_WHY_SWITCH.
 *       CSTATE: top_pc = read(st_sp) (a return address into machine code)
 *               top_sp = st_sp + 8; top_fp = read(F.cstate_addr + PROF_CSTATE_ST_FP)
 *     top_words[i] = read(top_sp + 8 i), i < PROF_RAW_TOP_WORDS
 *     top_bytes: the frame at top_fp seen as interpreted (its caller may be
 *           the interpreter, entered through ceReturnToInterpreter):
 *           PROF_RAW_BYTECODE | (bytes(read(top_fp - 8)) + bcpc - 1), bcpc
 *           from read(top_fp - F.frame_flags_offset) as in the chain
 *           below; 0 when that is no method (no flag set)
 *     root: root[0] = read(c_sp + PROF_CSTATE_C_RET) (into the interpreter),
 *           bp = read(c_sp + PROF_CSTATE_C_BP), then the native walk.
 *   MODE_INTERP (the interpreter owns the thread; r14 = its frame pointer,
 *                r15 = its bytecode ip, in every function of the VM: they
 *                are fixed registers there):
 *     (fp, ipv) = (r14, r15); with anchors, a = read(F.state_addr +
 *     PROF_STATE_PRIM_FP): if a != 0 (a primitive is running: code it
 *     calls may use r14/r15), (fp, ipv) = (a, read(F.state_addr + PROF_STATE_PRIM_IP))
 *     if fp == 0: raw.mode = UNKNOWN, PROF_RAW_WHY_SWITCH (frames are being
 *     unwound or copied); no Smalltalk chain, the native parts as below
 *     raw.mode = INTERP; top_fp = fp; top_pc = ipv (0 while the
 *     interpreter switches frames: the frame at fp is right, its bytecode
 *     is not known)
 *     ibp = read(F.state_addr + PROF_STATE_INTERP_BP) (the interpreter's C frame)
 *     if interp(ip): leaf[] empty; root[0] = ip; bp stays
 *     else: native walk from (ip, bp) into leaf[], each frame within
 *           sp <= bp < ibp, until a return address r with interp(r):
 *           root[0] = r, bp = the frame pointer read with it; if the walk
 *           ends first (a leaf without a frame pointer): root[0] =
 *           F.interp_start, bp = ibp, flag LEAF_GUESSLESS, leaf[] = ip alone
 *     root[1..]: the native walk from bp.
 *     top_bytes = bytes(read(fp - 8)) (the frame's method; see below)
 *   MODE_NONE: raw.mode = NATIVE; leaf[] = the native walk from (ip, bp).
 *
 *   A read of top_words[i] that fails leaves it 0 (the end of a page).
 *
 *   The Smalltalk chain (MACHINE, CSTATE, INTERP) from fp = top_fp: st[]
 *   holds the *callers* of the frame at top_fp, innermost first:
 *     loop (at most PROF_RAW_MAX_ST):
 *       if !stack(fp): flag BAD_FRAME; stop
 *       saved = read(fp + 8); link = read(fp)
 *       if link == 0:   (the first frame of its stack page)
 *         page = F.pages_addr + F.page_stride * ((fp - F.stack_base) / F.page_bytes)
 *         link = read(page + F.page_caller_fp)
 *         if link == 0:
 *           ctx = read(page + F.page_caller_context)
 *           if ctx == 0: stop (the first frame: its caller is C)
 *           contexts(ctx); stop
 *       (in this order: a return address into machine code may be odd)
 *       if saved == F.return_to_interpreter (and != 0):   interpreted caller,
 *                                        which entered machine code: bcpc in its flags
 *         fl = read(link - F.frame_flags_offset) >> 1   (fp[-3], a SmallInteger)
 *         st[n++] = PROF_RAW_BYTECODE | (bytes(read(link - 8)) + ((fl >> F.flags_bcpc_shift) & F.flags_bcpc_mask) - 1)
 *       else if zone(saved):             a return address into machine code
 *         st[n++] = saved - 1
 *       else if saved & 1:               the caller is interpreted: its resume bcpc
 *         st[n++] = PROF_RAW_BYTECODE | (bytes(read(link - 8)) + (saved >> 1) - 1)
 *       else: flag BAD_FRAME; stop
 *       fp = link
 *   contexts(ctx): while ctx != 0 && ctx != F.nil (at most the room left):
 *       pc = read(ctx + 8 + 8 * F.ctx_pc_slot); m = read(ctx + 8 + 8 * F.ctx_method_slot)
 *       st[n++] = PROF_RAW_BYTECODE | (bytes(m) + (pc >> 1) - 1)
 *       ctx = read(ctx + 8 + 8 * F.ctx_sender_slot)
 *   bytes(m): hdr = read(m); if (hdr & F.class_index_mask) != F.method_class_index:
 *       flag BAD_FRAME, stop; else m + 8 + 8 * ((read(m + 8) >> 1) & F.method_slots_mask)
 *   A bcpc of 0 stays 0 (no - 1).
 *
 *   The native walk from (pc, bp): emit pc; then while bp is 8-aligned and
 *   non-zero (and within its bounds, where it has some) and the room lasts:
 *   r = read(bp + 8); nbp = read(bp); stop at r == 0 or a failed read;
 *   emit r; a walk must move up (nbp > bp) or stop. The bounds keep a leaf
 *   that uses rbp for data (GMP's assembly) from adding frames read
 *   through it.
 *
 * Kernel frames (eBPF only, a sample taken in the kernel): kernel[] from
 * bpf_get_stack without BPF_F_USER_STACK, and the user registers from
 * bpf_task_pt_regs.
 */
#ifndef PROTO_STACKABI_H
#define PROTO_STACKABI_H

#ifdef __BPF__
typedef unsigned long long prof_u64;
typedef unsigned int prof_u32;
typedef unsigned short prof_u16;
#else
#include <stdint.h>
typedef uint64_t prof_u64;
typedef uint32_t prof_u32;
typedef uint16_t prof_u16;
#endif

/* -- What the VM publishes (export version 3: header.walk_offset) ---------- */

/* ProfVmState.mode: who owns the VM thread's registers. */
#define PROF_STATE_NONE 0    /* no Smalltalk running (start-up, shutdown) */
#define PROF_STATE_INTERP 1  /* the interpreter: r14 = frame, r15 = bytecode ip */
#define PROF_STATE_MACHINE 2 /* machine code, or C it called through a trampoline */

/* Offsets in the VM's state block (F.state_addr). */
#define PROF_STATE_MODE 0
#define PROF_STATE_INTERP_BP 8 /* the interpreter's own frame pointer (its C frame) */
/* The interpreter's anchor (PROF_WALK_F_ANCHORS): its frame pointer and
 * bytecode ip while a primitive it called runs; PRIM_FP is 0 otherwise. */
#define PROF_STATE_PRIM_FP 16
#define PROF_STATE_PRIM_IP 24

/* ProfWalkFacts.flags */
#define PROF_WALK_F_ANCHORS (1u << 0) /* st_sp is 0 except while C called through a runtime
                                         trampoline runs, and PROF_STATE_PRIM_FP/IP are kept */

/* Offsets in the JIT's C-side state (F.cstate_addr, vm/jit/enter.h's JitCState)
 * and in the C stack frame of an enilopmart (at c_sp). */
#define PROF_CSTATE_C_SP 0
#define PROF_CSTATE_ST_SP 16 /* the Smalltalk sp at a runtime call (anchors: 0 when no C it called runs) */
#define PROF_CSTATE_ST_FP 24
#define PROF_CSTATE_C_BP 40  /* the saved rbp: pushed first of six */
#define PROF_CSTATE_C_RET 48 /* the enilopmart's return address into the interpreter */

typedef struct ProfWalkFacts {
    prof_u32 size;             /* sizeof(ProfWalkFacts) of the writer */
    prof_u32 flags;            /* PROF_WALK_F_* */
    prof_u64 state_addr;       /* the VM's state block (PROF_STATE_*) */
    prof_u64 cstate_addr;      /* the JIT's C-side state; 0 without a JIT */
    prof_u64 interp_start;     /* the interpreter function's machine code */
    prof_u64 interp_end;
    prof_u64 zone_start;       /* the code zone; 0, 0 without a JIT */
    prof_u64 zone_end;
    prof_u64 return_to_interpreter; /* ceReturnToInterpreter; 0 without a JIT */
    prof_u64 stack_base;       /* the stack pages: npages of page_bytes from here */
    prof_u64 page_bytes;
    prof_u64 npages;
    prof_u64 pages_addr;       /* the page descriptors (vm/model/frame.h StackPage) */
    prof_u32 page_stride;      /* sizeof(StackPage) */
    prof_u32 page_caller_fp;   /* offsetof(StackPage, caller_fp) */
    prof_u32 page_caller_context; /* offsetof(StackPage, caller_context) */
    prof_u32 frame_flags_offset; /* bytes below fp of the flags word (24: fp[-3]) */
    prof_u32 flags_bcpc_shift; /* in the untagged flags word (vm/model/frameflags.h's BCPC) */
    prof_u32 flags_bcpc_mask;
    prof_u64 nil;              /* the nil object (a context's sender at the bottom) */
    prof_u32 ctx_sender_slot, ctx_pc_slot, ctx_method_slot;
    prof_u32 method_class_index; /* a method's header & class_index_mask */
    prof_u32 class_index_mask;
    prof_u32 method_slots_mask;  /* pointer slots in the method header's value (vm/model/methodheader.h) */
    prof_u32 fp_reg;           /* perf_event register numbers (PERF_REG_X86_R14 …) */
    prof_u32 ip_reg;
    prof_u64 reserved[4];
} ProfWalkFacts;

_Static_assert(sizeof(ProfWalkFacts) == 192, "ProfWalkFacts layout is ABI");

/* -- Unwind rules of machine code (LOAD records, version 3) ----------------
 *
 * A LOAD carries unwind_count pairs (u32 offset from the piece's start,
 * u32 rule), sorted by offset: the rule of a pc is that of the last pair at
 * or below its offset. A piece with no pairs is PROF_UNWIND_FRAMELESS
 * throughout (PICs, primitive and block stubs). */
#define PROF_UNWIND_FRAMELESS 1 /* the return address is at [sp]; bp is the caller's frame */
#define PROF_UNWIND_PUSHED_BP 2 /* push rbp done, mov rbp, rsp not yet: return address at [sp+8] */
#define PROF_UNWIND_FRAME 3     /* bp is this piece's frame: its caller's return address at [bp+8] */
#define PROF_UNWIND_CSTATE 4    /* a trampoline on the C stack: the Smalltalk state is in the JIT's
                                   C-side state (st_sp, st_fp), as for C it calls */
#define PROF_UNWIND_SWITCH 5    /* switching stacks (enilopmarts, ceReturnToInterpreter): unknown */

/* -- The raw record --------------------------------------------------------- */

#define PROF_RAW_MAX_KERNEL 32
#define PROF_RAW_MAX_LEAF 48
#define PROF_RAW_MAX_ST 160
#define PROF_RAW_MAX_ROOT 32
#define PROF_RAW_TOP_WORDS 4

#define PROF_RAW_NATIVE 0  /* ProfRawStack.mode */
#define PROF_RAW_INTERP 1
#define PROF_RAW_MACHINE 2
#define PROF_RAW_CSTATE 3
#define PROF_RAW_UNKNOWN 4

#define PROF_RAW_F_FAULT (1u << 0)      /* a read failed */
#define PROF_RAW_F_BAD_FRAME (1u << 1)  /* a frame failed a check: the chain stops there */
#define PROF_RAW_F_ST_TRUNCATED (1u << 2)   /* more Smalltalk frames than PROF_RAW_MAX_ST */
#define PROF_RAW_F_LEAF_TRUNCATED (1u << 3)
#define PROF_RAW_F_ROOT_TRUNCATED (1u << 4)
#define PROF_RAW_F_LEAF_GUESSLESS (1u << 5) /* the interpreter's return address is unknown */
#define PROF_RAW_F_KERNEL (1u << 6)     /* taken in the kernel: kernel[] holds its frames */
#define PROF_RAW_F_NO_FACTS (1u << 7)   /* the walker had no facts (yet): native frames only; top_words
                                           then hold r12, r13, r14, r15 (an older VM names one of them
                                           as its interpreter's ip register) */

#define PROF_RAW_WHY_SWITCH 1 /* raw.why: entering or leaving machine code */
#define PROF_RAW_WHY_NO_FACTS 2

/* st[] entries with this bit are addresses of bytecodes (the bytecodes
 * space of the code events), without it addresses of machine code. */
#define PROF_RAW_BYTECODE (1ull << 63)

typedef struct ProfRawStack {
    prof_u64 time_ns;      /* CLOCK_MONOTONIC */
    prof_u32 pid, tid;
    prof_u32 mode;         /* PROF_RAW_* */
    prof_u32 flags;        /* PROF_RAW_F_* */
    prof_u32 why;          /* PROF_RAW_WHY_*, mode UNKNOWN */
    prof_u16 nkernel, nleaf, nst, nroot;
    prof_u32 pad;
    prof_u64 top_pc;       /* MACHINE: ip; CSTATE: [st_sp]; INTERP: r15 */
    prof_u64 top_sp;
    prof_u64 top_fp;
    prof_u64 top_bytes;    /* INTERP: the bytecodes of the method of the frame at r14 (0: unknown);
                              MACHINE, CSTATE: where the frame at top_fp is if interpreted */
    prof_u64 top_words[PROF_RAW_TOP_WORDS];
    prof_u64 kernel[PROF_RAW_MAX_KERNEL];
    prof_u64 leaf[PROF_RAW_MAX_LEAF];
    prof_u64 st[PROF_RAW_MAX_ST];
    prof_u64 root[PROF_RAW_MAX_ROOT];
} ProfRawStack;

#endif
