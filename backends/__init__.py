"""Target backends: what each IREE HAL target needs from the compiler (flags, runtime driver, the
compile pipeline, the llvm-cpu tile policy and lowering forms, SPIR-V workarounds).

Backends sit above passes: they register their target-specific lowering rules and passes into
the registries of estuary.passes, and `pipeline` assembles a target's pass list. Nothing under
passes/ imports this package.
"""
