#!/usr/bin/env bash
# Installs the CUDA 13.0 pieces the flashqla build needs into a manylinux_2_28 (RHEL 8) container,
# from NVIDIA's rhel8 repository for the machine's arch: nvcc, the runtime headers and static
# library, the CCCL headers the kernels include, and cuobjdump + nvdisasm (tests/test_compiled_archs.py).
# cibuildwheel runs it as before-all (.github/workflows/wheels.yml).
#   bash scripts/ci_install_cuda.sh [13-0]
set -euxo pipefail
ver=${1:-13-0}
case "$(uname -m)" in
  x86_64) repo=x86_64 ;;
  aarch64) repo=sbsa ;;
  *) echo "ci_install_cuda.sh: no CUDA repository for $(uname -m)" >&2; exit 1 ;;
esac
dnf install -y dnf-plugins-core
dnf config-manager --add-repo "https://developer.download.nvidia.com/compute/cuda/repos/rhel8/${repo}/cuda-rhel8.repo"
dnf install -y "cuda-nvcc-${ver}" "cuda-cudart-devel-${ver}" "cuda-cccl-${ver}" "cuda-cuobjdump-${ver}" \
  "cuda-nvdisasm-${ver}"
# the component packages do not always create the /usr/local/cuda link the build looks for
[ -e /usr/local/cuda ] || ln -s "/usr/local/cuda-${ver/-/.}" /usr/local/cuda
/usr/local/cuda/bin/nvcc --version
