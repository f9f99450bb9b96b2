"""DMN decision tables, evaluated as Camunda 7 evaluates them, without running any code."""
