"""Fibertree level formats, the Tensor container and the public constructors."""
from .constructors import box, interval_set, intervals, points
from .dense import Dense
from .element import Element, Pattern
from .grid_intervals import interval_index
from .level import Level
from .sparse_byte_map import SparseByteMap
from .sparse_interval import SparseInterval
from .sparse_point import SparsePoint
from .sparse_list import SparseList
from .sparse_run_list import SparseRunList
from .tensor import Tensor
from .uniform_grid import UniformGrid
from .unit_cells import UnitCells

__all__ = ["Dense", "Element", "Pattern", "Level", "SparseByteMap", "SparseInterval", "SparsePoint", "SparseList",
           "SparseRunList", "Tensor", "UniformGrid", "UnitCells", "box", "interval_index", "interval_set", "intervals",
           "points"]
