//! Importers: fio JSON, sysbench text, iostat text, pt-diskstats samples → iosat's report types.
