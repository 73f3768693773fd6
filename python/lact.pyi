"""Type stub of the `lact` module (python/, pybind11); the docstrings (help(lact)) say more."""
import os
from typing import Any, Optional, Sequence, Tuple, Union, final

import numpy as np
import numpy.typing as npt

ArrayLike = npt.ArrayLike
Size = Tuple[int, int]
SizeArg = Union[Sequence[int], Sequence[float], str]  # (H, W) of whole numbers, or "HxW"
Path = Union[str, bytes, os.PathLike]  # a NUL in it is a ValueError

__version__: str
__all__: tuple[str, ...]

class Error(RuntimeError):
    """lact's one-line errors (files, fields, sizes), with the CLI's text."""

class RenderMemoryError(Error):
    """Model.render of a call the render's memory check refuses (the CLI's check of a camera path's call: every
    camera's batch, the call's images kept together): the message says the size is too large and to render at a
    smaller size=(H, W) (several cameras: or fewer cameras a call); the check's numbers are attributes."""
    size: Size  # the refused (H, W)
    tokens: int  # the tokens of the view(s) rendered at once
    bytes_needed: int  # the estimate of the process's peak while rendering (on a GPU: the device's part, or the host's)
    bytes_available: int  # the limit it exceeds (MemAvailable, ulimit -v/-d, a cgroup's, the device's)
    suggested_size: Optional[Size]  # the largest (H, W) of the same shape, whole patches, where the call fits; None: none

class Warning(UserWarning):
    """Model.encode out of the model's regime (size, camera layout, distances), in lact render's words; Model.render
    of cameras made for another size (a principal point far from the centre)."""
    ...

@final
class State:
    nbytes: int
    size: Size
    input_views: int
    def save(self, path: Path, *, force: bool = False) -> None: ...
    @staticmethod
    def load(path: Path, model: Model) -> State: ...

@final
class Model:
    config: dict[str, Any]
    training_size: Optional[Size]
    patch_size: int
    path: str
    device: str
    precision: str
    threads: int
    def __init__(self, path: Path, device: str = "cpu", precision: str = "fp32", threads: int = 0) -> None: ...
    def encode(self, images: ArrayLike, intrinsics: ArrayLike, c2w: ArrayLike) -> State: ...
    def render(self, state: State, intrinsics: ArrayLike, c2w: ArrayLike, size: Optional[SizeArg] = None,
               out: Optional[npt.NDArray[np.float32]] = None) -> npt.NDArray[np.float32]: ...

@final
class Scene:
    name: str
    source: str
    layout: str
    images: npt.NDArray[np.float32]
    intrinsics: npt.NDArray[np.float32]
    c2w: npt.NDArray[np.float64]
    names: list[str]
    inputs: list[int]
    targets: list[int]

def read_scene(path: Path, inputs: Union[str, Sequence[int], Sequence[bool]] = "",
               targets: Union[str, Sequence[int], Sequence[bool]] = "rest", size: Optional[SizeArg] = None,
               normalize_poses: str = "none",
               scene: Optional[str] = None) -> Scene: ...
def scene_names(path: Path) -> list[str]: ...
def psnr(a: ArrayLike, b: ArrayLike) -> float: ...
def ssim(a: ArrayLike, b: ArrayLike) -> float: ...
def lpips(a: ArrayLike, b: ArrayLike, weights: Optional[Path] = None, net: Optional[str] = None) -> float: ...
def camera_path(kind: str, frames: int = 120, size: SizeArg = (256, 256), intrinsics: Optional[ArrayLike] = None,
                c2w: Optional[ArrayLike] = None, hfov: float = 50.0, min_radius: float = 1.7, max_radius: float = 3.0,
                elevation: float = 30.0, radius: float = 0.0, smoothness: float = 0.0
                ) -> Tuple[npt.NDArray[np.float32], npt.NDArray[np.float64]]: ...
