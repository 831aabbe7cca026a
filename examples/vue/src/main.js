import { createApp } from 'vue';
import { createRouter, createWebHistory } from 'vue-router';
import App from './App.vue';
import Checkout from './Checkout.vue';
import Home from './Home.vue';

const router = createRouter({
  history: createWebHistory(),
  routes: [
    { path: '/', component: Home },
    { path: '/checkout', component: Checkout },
  ],
});

createApp(App).use(router).mount('#app');
