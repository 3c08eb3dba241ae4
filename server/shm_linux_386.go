package server

const sysMemfdCreate = 356
