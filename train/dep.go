package train

import (
	_ "gonum.org/v1/plot"
	_ "gorgonia.org/gorgonia"
)
