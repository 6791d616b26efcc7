"""sdp-expect: Databricks-style expectations for open-source Spark Declarative Pipelines.

Use it as a drop-in for ``pyspark.pipelines``::

    from sdp_expect import pipelines as dp

or, for Delta Live Tables code, ``from sdp_expect import dlt``.
"""

from sdp_expect.base.errors import SdpExpectError
from sdp_expect.core.model import Action, Expectation

__version__ = "0.1.0"

__all__ = ["Action", "Expectation", "SdpExpectError", "__version__"]
