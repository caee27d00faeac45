# lightweight: for clustered tables that receive many small appends. Small
# unclustered files are packed in (min, max) order of one clustering column,
# without sorting rows, so file-level skipping on that column improves at
# binpack cost.
table "orders" {
  url      = "gs://warehouse/orders"
  strategy = "lightweight"

  clustering {
    # Dotted paths name nested fields (customer.region).
    columns            = ["order_date", "customer.region"]
    # The column files are ordered by; default: picked by the planner from
    # columns.
    lightweight_column = "order_date"
    # Order by the column only if files' value ranges overlap little: their
    # average relative range must be at most this.
    max_relative_file_range = 0.5
  }

  triggers {
    small_files = 30
  }
}
