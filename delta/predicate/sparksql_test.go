package predicate

import (
	"errors"
	"strings"
	"testing"
)

func testResolver(cols map[string]Kind) Resolver {
	return func(parts []string) (Column, bool) {
		name := parts[len(parts)-1]
		k, ok := cols[name]
		if !ok {
			return Column{}, false
		}
		return Column{Path: []string{name}, Kind: k}, true
	}
}

func TestParseSparkReadsThePredicatesSparkAndDatabricksWrite(t *testing.T) {
	res := testResolver(map[string]Kind{"id": KindInt, "col1": KindInt, "birthyear": KindInt, "age": KindInt, "name": KindString, "ts": KindTimestamp, "d": KindDate, "flag": KindBool, "x": KindFloat, "col2": KindString})
	cases := []struct {
		text    string
		want    string
		exact   bool
		filters string
		joins   string
	}{
		// Strings from the commitInfo of Spark- and DBR-written test tables.
		{"(id#478L < 5)", "`id` < 5", true, "id", ""},
		{"((birthyear#132 = 1995) AND (age#133 < 30))", "(`birthyear` = 1995) AND (`age` < 30)", true, "birthyear,age", ""},
		{"((id#1904L >= 5) AND (id#1904L <= 9))", "(`id` >= 5) AND (`id` <= 9)", true, "id", ""},
		{"(col1#10915 = 16)", "`col1` = 16", true, "col1", ""},
		{"((`id` % CAST(2 AS BIGINT)) = CAST(0 AS BIGINT))", "true", false, "", ""},
		{"((id#697L % cast(2 as bigint)) = cast(0 as bigint))", "true", false, "", ""},
		{"(id#5058 = id#5062)", "true", false, "", "id"},
		{"(oldData.`id` = newData.`id`)", "true", false, "", "id"},
		// Spark SQL as people write it and listeners post it.
		{"id BETWEEN 1 AND 5 AND name IN ('a', 'b''c')", "(`id` >= 1) AND (`id` <= 5) AND (`name` IN (\"a\", \"b'c\"))", true, "id,name", ""},
		{"(name#12 = foo)", "`name` = \"foo\"", true, "name", ""},
		{"NOT (id > 3 OR id IS NULL)", "(`id` <= 3) AND (`id` IS NOT NULL)", true, "id", ""},
		{"isnotnull(id#1L) AND (cast(id#1 as bigint) > 5L)", "(`id` IS NOT NULL) AND (`id` > 5)", true, "id", ""},
		{"ts >= TIMESTAMP '2024-01-01 00:00:00' AND d < DATE '2024-02-01'", "", true, "ts,d", ""},
		{"10 > id", "`id` < 10", true, "id", ""},
		{"id < 5 OR upper(name) = 'X'", "true", false, "id", ""},
		{"NOT (upper(name) = 'X')", "true", false, "", ""},
		{"flag AND x >= -1.5", "(`flag` = true) AND (`x` >= -1.5)", true, "flag,x", ""},
		{"id NOT IN (1, 2)", "`id` NOT IN (1, 2)", true, "id", ""},
		// rewrite-datachange-false v4 (a real Spark DELETE): a prefix LIKE.
		{"`col2` LIKE 'data-2-%'", "(`col2` >= \"data-2-\") AND (`col2` < \"data-2.\")", false, "col2", ""},
		{"name NOT LIKE 'a%'", "true", false, "", ""},
		{"name LIKE '%a'", "`name` IS NOT NULL", false, "name", ""},
		{"unknown_col = 3 AND id = 1", "`id` = 1", false, "id", ""},
	}
	for _, c := range cases {
		p, err := ParseSpark(c.text, res)
		if err != nil {
			t.Errorf("%s: %v", c.text, err)
			continue
		}
		if c.want != "" && p.Expr.String() != c.want {
			t.Errorf("%s: got %s, want %s", c.text, p.Expr, c.want)
		}
		if p.Exact != c.exact {
			t.Errorf("%s: exact %v, want %v", c.text, p.Exact, c.exact)
		}
		if got := colNames(p.Filters); got != c.filters {
			t.Errorf("%s: filters %q, want %q", c.text, got, c.filters)
		}
		if got := colNames(p.Joins); got != c.joins {
			t.Errorf("%s: joins %q, want %q", c.text, got, c.joins)
		}
	}
}

func colNames(cols []Column) string {
	var s []string
	for _, c := range cols {
		s = append(s, strings.Join(c.Path, "."))
	}
	return strings.Join(s, ",")
}

func TestParseSparkNeverPrunesARowThePredicateHolds(t *testing.T) {
	res := testResolver(map[string]Kind{"id": KindInt, "name": KindString})
	rows := []MapRow{}
	for i := int64(0); i < 20; i++ {
		v := Int(i)
		n := String(string(rune('a' + i)))
		rows = append(rows, MapRow{"id": &v, "name": &n})
	}
	rows = append(rows, MapRow{"id": nil, "name": nil})
	// Each text with the rows it holds, computed independently.
	cases := []struct {
		text string
		keep func(id int64, null bool) bool
	}{
		{"id % 2 = 0 OR id < 3", func(id int64, null bool) bool { return !null && (id%2 == 0 || id < 3) }},
		{"NOT (id % 2 = 0) AND id > 15", func(id int64, null bool) bool { return !null && id%2 == 1 && id > 15 }},
		{"name LIKE 'c%' OR id = 10", func(id int64, null bool) bool { return !null && (id == 2 || id == 10) }},
		{"id > 4 AND NOT (id >= 8)", func(id int64, null bool) bool { return !null && id > 4 && id < 8 }},
	}
	for _, c := range cases {
		p, err := ParseSpark(c.text, res)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			tr, err := EvalRow(p.Expr, r)
			if err != nil {
				t.Fatal(err)
			}
			id, null := int64(0), r["id"] == nil
			if !null {
				id = r["id"].I
			}
			if c.keep(id, null) && tr != True {
				t.Errorf("%s: row id=%d (null %v) dropped by %s", c.text, id, null, p.Expr)
			}
		}
	}
}

func TestParseSparkRefusesWhatIsNotAnExpression(t *testing.T) {
	res := testResolver(map[string]Kind{"id": KindInt})
	for _, text := range []string{"(id = 1", "id = 'x", "id IN 1", "id ; drop", "CAST(id AS", strings.Repeat("(", 1000) + "id = 1" + strings.Repeat(")", 1000), strings.Repeat("x", MaxSparkPredicateLen+1)} {
		if _, err := ParseSpark(text, res); !errors.Is(err, ErrSparkSyntax) {
			t.Errorf("%.40s: got %v, want ErrSparkSyntax", text, err)
		}
	}
}
