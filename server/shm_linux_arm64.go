package server

const sysMemfdCreate = 279
