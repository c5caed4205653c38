//! The plan compiled to native code with Cranelift.
//!
//! [`compile`] turns an engine's fused plan ([`p4jet_engine::Plan`]) into four
//! functions: the parser with checksum verification over a batch, the ingress and
//! egress controls over chunks of 64 packets, and the deparser with checksum updates
//! for one packet (`codegen`). Offsets, widths, masks, constants and next states are in
//! the code; what has no compiled form (general parser operations, externs, table
//! lookups) is a call back into the interpreter, which does exactly what it does when
//! it interprets the plan (`p4jet_engine`'s `step.rs`). [`attach`] compiles an engine
//! and gives it the code, which its stages then run instead of the interpreter.
//!
//! `unsafe` lives in one module, `native.rs`: calling the generated functions and the
//! helpers they call.
#![deny(unsafe_code)]

pub mod abi;
mod codegen;
mod native;

use std::time::Instant;

use cranelift_codegen::ir::{AbiParam, UserFuncName, types};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module, default_libcall_names};
use p4jet_engine::{ControlBlock, Engine, NativeStats};

pub use native::Compiled;

/// Whether Cranelift generates code for this host (x86-64 and aarch64).
pub fn supported() -> bool {
    cfg!(any(target_arch = "x86_64", target_arch = "aarch64"))
        && cranelift_native::builder().is_ok()
}

/// Compiles `e`'s plan and attaches the code to `e` (a no-op for the reference plan,
/// which is interpreted by definition).
pub fn attach(e: &mut Engine) -> Result<NativeStats, String> {
    let c = compile(e)?;
    let stats = c.stats;
    e.set_native(Box::new(c));
    Ok(stats)
}

/// What a function takes.
#[derive(Clone, Copy)]
enum Kind {
    /// `(env, lanes, n) -> u64`
    Batch,
}

/// Compiles `e`'s plan.
pub fn compile(e: &Engine) -> Result<Compiled, String> {
    let t0 = Instant::now();
    let cpu0 = native::thread_cpu();
    let mut flags = settings::builder();
    let set = |f: &mut settings::Builder, k: &str, v: &str| {
        f.set(k, v)
            .map_err(|err| format!("cranelift setting {k}={v}: {err}"))
    };
    set(&mut flags, "opt_level", "speed")?;
    set(&mut flags, "is_pic", "false")?;
    set(&mut flags, "use_colocated_libcalls", "false")?;
    set(
        &mut flags,
        "enable_verifier",
        if cfg!(debug_assertions) {
            "true"
        } else {
            "false"
        },
    )?;
    let isa = cranelift_native::builder()
        .map_err(|err| format!("this host is not supported by Cranelift: {err}"))?
        .finish(settings::Flags::new(flags))
        .map_err(|err| format!("cranelift: {err}"))?;
    let call_conv = isa.default_call_conv();
    let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
    let helpers = native::helpers();
    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let mut code_bytes = 0usize;
    let mut functions = 0usize;
    // P4JET_JIT_DUMP=1: every function's Cranelift IR and machine code on stderr
    let dump = std::env::var_os("P4JET_JIT_DUMP").is_some();
    // P4JET_JIT_CODE_DIR=DIR: every function's machine code in DIR/NAME-ADDRESS.bin, for
    // profiles of the generated code (tools/jit_profile.sh); calls to helpers are left
    // unrelocated in the files
    let code_dir = std::env::var_os("P4JET_JIT_CODE_DIR").map(std::path::PathBuf::from);
    let mut code: Vec<(String, Vec<u8>, FuncId)> = vec![];

    let mut define = |module: &mut JITModule,
                      name: &str,
                      kind: Kind,
                      body: &dyn Fn(&mut codegen::Gen, &[cranelift_codegen::ir::Value])|
     -> Result<FuncId, String> {
        let mut sig = module.make_signature();
        sig.params.push(AbiParam::new(types::I64));
        sig.params.push(AbiParam::new(types::I64));
        let Kind::Batch = kind;
        sig.params.push(AbiParam::new(types::I64));
        sig.returns.push(AbiParam::new(types::I64));
        let id = module
            .declare_function(name, Linkage::Local, &sig)
            .map_err(|err| format!("cranelift: {err}"))?;
        ctx.func.signature = sig;
        ctx.func.name = UserFuncName::user(0, id.as_u32());
        let tcfg = module.target_config();
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            let params = b.block_params(entry).to_vec();
            let mut g = codegen::Gen::new(b, e, &helpers, call_conv, params[0]);
            body(&mut g, &params);
            g.b.seal_all_blocks();
            g.b.finalize(tcfg);
        }
        if dump {
            eprintln!("; {name}\n{}", ctx.func.display());
            ctx.set_disasm(true);
        }
        module
            .define_function(id, &mut ctx)
            .map_err(|err| format!("cranelift: compiling {name}: {err:?}"))?;
        if dump && let Some(vcode) = ctx.compiled_code().and_then(|c| c.vcode.as_ref()) {
            eprintln!("; {name}: machine code\n{vcode}");
        }
        code_bytes += ctx.compiled_code().map_or(0, |c| c.code_buffer().len());
        if code_dir.is_some()
            && let Some(c) = ctx.compiled_code()
        {
            code.push((name.to_string(), c.code_buffer().to_vec(), id));
        }
        functions += 1;
        module.clear_context(&mut ctx);
        Ok(id)
    };

    // without an ingress control, the unicast check after ingress follows the parser
    // in the same loop
    let arrive_unicast = e.plan().ingress.init.is_none();
    let arrive = define(&mut module, "arrive_and_parse", Kind::Batch, &|g, p| {
        codegen::parse::emit(g, p[1], p[2], true, arrive_unicast)
    })?;
    let mut control =
        |module: &mut JITModule, which: ControlBlock| -> Result<Option<FuncId>, String> {
            let ctl = match which {
                ControlBlock::Ingress => &e.plan().ingress,
                ControlBlock::Egress => &e.plan().egress,
            };
            if ctl.init.is_none() {
                return Ok(None);
            }
            let name = match which {
                ControlBlock::Ingress => "ingress",
                ControlBlock::Egress => "egress",
            };
            define(module, name, Kind::Batch, &|g, p| {
                codegen::control::emit(g, which, p[1], p[2])
            })
            .map(Some)
        };
    let ingress = control(&mut module, ControlBlock::Ingress)?;
    let egress = control(&mut module, ControlBlock::Egress)?;
    let unicast = define(&mut module, "unicast", Kind::Batch, &|g, p| {
        codegen::arch::emit_unicast(g, p[1], p[2])
    })?;
    let begin_egress = if codegen::arch::begin_egress_writes(e)
        && !(egress.is_some() && codegen::control::fuses_begin_egress(e))
    {
        Some(define(
            &mut module,
            "begin_egress",
            Kind::Batch,
            &|g, p| codegen::arch::emit_begin_egress(g, p[1], p[2]),
        )?)
    } else {
        None
    };
    let deparse = if e.plan().deparser.fixed.is_some() {
        Some(define(&mut module, "deparse", Kind::Batch, &|g, p| {
            codegen::deparse::emit_pass(g, p[1], p[2])
        })?)
    } else {
        None
    };
    module
        .finalize_definitions()
        .map_err(|err| format!("cranelift: {err}"))?;
    let addr = |id: FuncId| module.get_finalized_function(id);
    if let Some(dir) = &code_dir {
        for (name, bytes, id) in &code {
            let path = dir.join(format!("{name}-{:x}.bin", addr(*id) as usize));
            if let Err(err) = std::fs::write(&path, bytes) {
                eprintln!("p4jet: P4JET_JIT_CODE_DIR: {}: {err}", path.display());
            }
        }
    }
    let fns = native::Addrs {
        arrive: addr(arrive),
        ingress: ingress.map(addr),
        egress: egress.map(addr),
        unicast: addr(unicast),
        ingress_unicast: ingress.is_some() && codegen::control::fuses_unicast(e),
        arrive_unicast,
        begin_egress: begin_egress.map(addr),
        deparse: deparse.map(addr),
    };
    Ok(native::compiled(
        e,
        fns,
        module,
        NativeStats {
            compile_time: t0.elapsed(),
            compile_cpu: cpu0
                .zip(native::thread_cpu())
                .map(|(a, b)| b.saturating_sub(a)),
            code_bytes,
            functions,
        },
    ))
}
