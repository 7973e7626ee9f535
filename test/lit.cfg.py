# -*- Python -*-
# lit configuration of the PagedAttn tests (test/).

import os
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "PagedAttn"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.pa_obj_root, "test")
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%shlibext", config.llvm_shlib_ext))
config.substitutions.append(("%mlir_lib_dir", config.mlir_lib_dir))
config.substitutions.append(("%pa_src_root", config.pa_src_root))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [os.path.join(config.pa_obj_root, "bin"), config.llvm_tools_dir]
llvm_config.add_tool_substitutions(
    ["pa-opt", "pa-compile", "mlir-runner", "mlir-opt"], tool_dirs
)
# Built only where the CUDA toolkit is found; used by REQUIRES: cuda tests.
llvm_config.add_tool_substitutions(
    [ToolSubst("pa-gpu-runner", unresolved="ignore")], tool_dirs
)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# ptxas (CUDA toolkit, no GPU needed) checks the generated PTX for spills.
ptxas = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas")
if os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
config.substitutions.append(("%python", sys.executable))

if config.cuda_available:
    config.available_features.add("cuda")
